// Stream mixing. The scalar-weight reductions are summed per chunk then in chunk order, so the
// result does not depend on the thread count.
#include "trainer/cpu/residual.h"

#include <algorithm>
#include <vector>

#include "trainer/cpu/parallel.h"
#include "trainer/cpu/reduce.h"
#include "trainer/model/bf16.h"

namespace ablate::cpu {
namespace {

constexpr int64_t kResidualChunk = 8192;

template <class T>
T Dot(const T* a, const T* b, int64_t n) {
  int64_t chunks = (n + kResidualChunk - 1) / kResidualChunk;
  std::vector<T> part(chunks, T(0));
  ParallelFor(chunks, [&](int64_t c) {
    int64_t i = c * kResidualChunk;
    part[c] = LaneDot(a + i, b + i, std::min(n, i + kResidualChunk) - i);
  });
  T s = 0;
  for (T p : part) s += p;
  return s;
}

template <class T>
void Axpy(T* out, T a, const T* x, int64_t n) {
  ParallelFor((n + kResidualChunk - 1) / kResidualChunk, [&](int64_t c) {
    for (int64_t i = c * kResidualChunk, e = std::min(n, i + kResidualChunk); i < e; ++i) {
      out[i] += a * x[i];
    }
  });
}

}  // namespace

template <class T>
T mix_weight(T w, Rounding rounding) {
  return rounding == Rounding::kBf16 ? T(RoundToBf16(float(w))) : w;
}

template <class T>
void residual_mix_forward(T* out, const T* x, T a, const T* y, T b, int64_t n,
                          Rounding rounding) {
  if (rounding == Rounding::kBf16) {
    a = mix_weight(a, rounding), b = mix_weight(b, rounding);
    auto r = [](T v) { return T(RoundToBf16(float(v))); };
    ParallelFor((n + kResidualChunk - 1) / kResidualChunk, [&](int64_t c) {
      int64_t i0 = c * kResidualChunk, e = std::min(n, i0 + kResidualChunk);
      for (int64_t i = i0; i < e; ++i) out[i] = r(r(a * x[i]) + (y ? r(b * y[i]) : T(0)));
    });
    return;
  }
  ParallelFor((n + kResidualChunk - 1) / kResidualChunk, [&](int64_t c) {
    int64_t i0 = c * kResidualChunk, e = std::min(n, i0 + kResidualChunk);
    if (y == nullptr) {
      for (int64_t i = i0; i < e; ++i) out[i] = a * x[i];
    } else {
      for (int64_t i = i0; i < e; ++i) out[i] = a * x[i] + b * y[i];
    }
  });
}

template <class T>
void round_to_bf16(T* x, int64_t n) {
  ParallelFor((n + kResidualChunk - 1) / kResidualChunk, [&](int64_t c) {
    int64_t i0 = c * kResidualChunk, e = std::min(n, i0 + kResidualChunk);
    for (int64_t i = i0; i < e; ++i) x[i] = T(RoundToBf16(float(x[i])));
  });
}

template <class T>
void residual_mix_backward(const MixGrads<T>& g, const T* dout, const T* x, T a, const T* y, T b,
                           int64_t n) {
  if (g.da != nullptr) *g.da += Dot(dout, x, n);
  if (g.db != nullptr) *g.db += Dot(dout, y, n);
  if (g.dx != nullptr) Axpy(g.dx, a, dout, n);
  if (g.dy != nullptr) Axpy(g.dy, b, dout, n);
}

template void residual_mix_forward<float>(float*, const float*, float, const float*, float,
                                          int64_t, Rounding);
template void residual_mix_forward<double>(double*, const double*, double, const double*, double,
                                           int64_t, Rounding);
template float mix_weight<float>(float, Rounding);
template double mix_weight<double>(double, Rounding);
template void round_to_bf16<float>(float*, int64_t);
template void round_to_bf16<double>(double*, int64_t);
template void residual_mix_backward<float>(const MixGrads<float>&, const float*, const float*,
                                           float, const float*, float, int64_t);
template void residual_mix_backward<double>(const MixGrads<double>&, const double*,
                                            const double*, double, const double*, double,
                                            int64_t);

}  // namespace ablate::cpu
