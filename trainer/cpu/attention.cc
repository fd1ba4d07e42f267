// Attention kernels. Forward parallelises over (batch, head, query); backward over (batch, head)
// so that each task owns its slice of dk and dv.
#include "trainer/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/cpu/parallel.h"

namespace ablate::cpu {
namespace {

template <class T>
T Dot(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Row (b, t, h) of a (B, T, NH, HD) tensor.
inline int64_t Row(int64_t bi, int64_t ti, int64_t hi, int64_t t, int64_t nh, int64_t hd) {
  return ((bi * t + ti) * nh + hi) * hd;
}

}  // namespace

void attention_key_start(int32_t* lo, const int32_t* tokens, int64_t stride, int64_t b, int64_t t,
                         const AttentionMask& mask) {
  for (int64_t bi = 0; bi < b; ++bi) {
    int64_t doc_start = 0;
    for (int64_t ti = 0; ti < t; ++ti) {
      if (mask.doc_masking && tokens[bi * stride + ti] == mask.bos_token) doc_start = ti;
      int64_t start = doc_start;
      if (mask.window_blocks > 0) {
        int64_t first_block = ti / mask.block_tokens - mask.window_blocks + 1;
        start = std::max(start, first_block * mask.block_tokens);
      }
      lo[bi * t + ti] = int32_t(std::max<int64_t>(start, 0));
    }
  }
}

template <class T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v, const int32_t* lo,
                       int64_t b, int64_t t, int64_t nh, int64_t hd, T scale) {
  ParallelFor(b * nh, [&](int64_t bh) {
    int64_t bi = bh / nh, hi = bh % nh;
    std::vector<T> p(t);
    for (int64_t ti = 0; ti < t; ++ti) {
      const T* qt = q + Row(bi, ti, hi, t, nh, hd);
      int64_t s0 = lo[bi * t + ti];
      T mx = -INFINITY;
      for (int64_t s = s0; s <= ti; ++s) {
        p[s] = scale * Dot(qt, k + Row(bi, s, hi, t, nh, hd), hd);
        mx = std::max(mx, p[s]);
      }
      T sum = 0;
      for (int64_t s = s0; s <= ti; ++s) sum += (p[s] = std::exp(p[s] - mx));
      T* o = out + Row(bi, ti, hi, t, nh, hd);
      std::fill(o, o + hd, T(0));
      for (int64_t s = s0; s <= ti; ++s) {
        const T* vs = v + Row(bi, s, hi, t, nh, hd);
        T w = p[s] / sum;
        for (int64_t j = 0; j < hd; ++j) o[j] += w * vs[j];
      }
      lse[bh * t + ti] = mx + std::log(sum);
    }
  });
}

// With p_s = exp(scale·q·k_s − lse) and D = dout·out: dS_s = p_s (dout·v_s − D),
// dq += scale Σ dS_s k_s, dk_s += scale dS_s q, dv_s += p_s dout.
template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                        const T* out, const T* lse, const int32_t* lo, int64_t b, int64_t t,
                        int64_t nh, int64_t hd, T scale) {
  ParallelFor(b * nh, [&](int64_t bh) {
    int64_t bi = bh / nh, hi = bh % nh;
    for (int64_t ti = 0; ti < t; ++ti) {
      int64_t r = Row(bi, ti, hi, t, nh, hd);
      const T* qt = q + r;
      const T* dot = dout + r;
      T d = Dot(dot, out + r, hd);
      T l = lse[bh * t + ti];
      for (int64_t s = lo[bi * t + ti]; s <= ti; ++s) {
        int64_t rs = Row(bi, s, hi, t, nh, hd);
        T p = std::exp(scale * Dot(qt, k + rs, hd) - l);
        T ds = p * (Dot(dot, v + rs, hd) - d) * scale;
        for (int64_t j = 0; j < hd; ++j) {
          dq[r + j] += ds * k[rs + j];
          dk[rs + j] += ds * qt[j];
          dv[rs + j] += p * dot[j];
        }
      }
    }
  });
}

template void attention_forward<float>(float*, float*, const float*, const float*, const float*,
                                       const int32_t*, int64_t, int64_t, int64_t, int64_t, float);
template void attention_forward<double>(double*, double*, const double*, const double*,
                                        const double*, const int32_t*, int64_t, int64_t, int64_t,
                                        int64_t, double);
template void attention_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, const float*,
                                        const int32_t*, int64_t, int64_t, int64_t, int64_t, float);
template void attention_backward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, const double*, const double*,
                                         const double*, const int32_t*, int64_t, int64_t, int64_t,
                                         int64_t, double);

}  // namespace ablate::cpu
