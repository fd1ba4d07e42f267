// RoPE. The backward is the inverse rotation, so both share one kernel with the sign of sin.
#include "trainer/cpu/rope.h"

#include <cmath>

#include "trainer/cpu/parallel.h"

namespace ablate::cpu {
namespace {

double Theta(int64_t j, int64_t hd, RopeKind kind, double base) {
  if (kind == RopeKind::kFull) return std::pow(base, -2.0 * double(j) / double(hd));
  int64_t quarter = hd / 4;
  if (j >= quarter) return 0.0;
  if (quarter == 1) return 1.0;
  return std::pow(1.0 / 1024.0, double(j) / double(quarter - 1));
}

// sign = +1 rotates forward, −1 applies the transpose.
template <class T>
void Rotate(T* out, const T* inp, const RopeTable<T>& table, int64_t b, int64_t t, int64_t nh,
            int64_t hd, T sign) {
  int64_t half = hd / 2;
  ParallelFor(b * t, [&](int64_t bt) {
    const T* cs = table.cos.data() + (bt % t) * half;
    const T* sn = table.sin.data() + (bt % t) * half;
    for (int64_t h = 0; h < nh; ++h) {
      const T* x = inp + (bt * nh + h) * hd;
      T* y = out + (bt * nh + h) * hd;
      for (int64_t j = 0; j < half; ++j) {
        T x1 = x[j], x2 = x[j + half], s = sign * sn[j];
        y[j] = x1 * cs[j] + x2 * s;
        y[j + half] = -x1 * s + x2 * cs[j];
      }
    }
  });
}

}  // namespace

template <class T>
RopeTable<T> rope_table(int64_t seq_len, int64_t head_dim, RopeKind kind, double base) {
  int64_t half = head_dim / 2;
  RopeTable<T> table{std::vector<T>(seq_len * half), std::vector<T>(seq_len * half)};
  for (int64_t j = 0; j < half; ++j) {
    double theta = Theta(j, head_dim, kind, base);
    for (int64_t p = 0; p < seq_len; ++p) {
      table.cos[p * half + j] = T(std::cos(double(p) * theta));
      table.sin[p * half + j] = T(std::sin(double(p) * theta));
    }
  }
  return table;
}

template <class T>
void rope_forward(T* out, const T* inp, const RopeTable<T>& table, int64_t b, int64_t t,
                  int64_t nh, int64_t hd) {
  Rotate(out, inp, table, b, t, nh, hd, T(1));
}

template <class T>
void rope_backward(T* dinp, const T* dout, const RopeTable<T>& table, int64_t b, int64_t t,
                   int64_t nh, int64_t hd) {
  Rotate(dinp, dout, table, b, t, nh, hd, T(-1));
}

template RopeTable<float> rope_table<float>(int64_t, int64_t, RopeKind, double);
template RopeTable<double> rope_table<double>(int64_t, int64_t, RopeKind, double);
template void rope_forward<float>(float*, const float*, const RopeTable<float>&, int64_t, int64_t,
                                  int64_t, int64_t);
template void rope_forward<double>(double*, const double*, const RopeTable<double>&, int64_t,
                                   int64_t, int64_t, int64_t);
template void rope_backward<float>(float*, const float*, const RopeTable<float>&, int64_t,
                                   int64_t, int64_t, int64_t);
template void rope_backward<double>(double*, const double*, const RopeTable<double>&, int64_t,
                                    int64_t, int64_t, int64_t);

}  // namespace ablate::cpu
