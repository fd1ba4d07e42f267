// Attention kernels. Forward parallelises over (batch, head, query); backward over (batch, head)
// so that each task owns its slice of dk and dv.
#include "trainer/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/cpu/fast_exp.h"
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

namespace {

// One (batch, head) slice gathered into contiguous scratch: q, k, v as (T, HD) and k, v
// transposed as (HD, T), so that every inner loop is a contiguous, vectorisable axpy.
template <class T>
struct HeadSlice {
  std::vector<T> q, k, v, kt, vt, p, dp;
  HeadSlice(int64_t t, int64_t hd)
      : q(t * hd), k(t * hd), v(t * hd), kt(t * hd), vt(t * hd), p(t), dp(t) {}
  void Load(const T* qs, const T* ks, const T* vs, int64_t bi, int64_t hi, int64_t t, int64_t nh,
            int64_t hd) {
    for (int64_t ti = 0; ti < t; ++ti) {
      int64_t r = Row(bi, ti, hi, t, nh, hd);
      for (int64_t j = 0; j < hd; ++j) {
        q[ti * hd + j] = qs[r + j];
        k[ti * hd + j] = kt[j * t + ti] = ks[r + j];
        v[ti * hd + j] = vt[j * t + ti] = vs[r + j];
      }
    }
  }
};

// p[s] = scale · q·k_s for s in [s0, s1), via the transposed keys.
template <class T>
void Scores(T* p, const T* q, const T* kt, int64_t s0, int64_t s1, int64_t t, int64_t hd,
            T scale) {
  for (int64_t s = s0; s < s1; ++s) p[s] = 0;
  for (int64_t j = 0; j < hd; ++j) {
    T qj = scale * q[j];
    const T* row = kt + j * t;
    for (int64_t s = s0; s < s1; ++s) p[s] += qj * row[s];
  }
}

}  // namespace

template <class T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v, const int32_t* lo,
                       int64_t b, int64_t t, int64_t nh, int64_t hd, T scale) {
  ParallelFor(b * nh, [&](int64_t bh) {
    int64_t bi = bh / nh, hi = bh % nh;
    HeadSlice<T> h(t, hd);
    h.Load(q, k, v, bi, hi, t, nh, hd);
    T* p = h.p.data();
    for (int64_t ti = 0; ti < t; ++ti) {
      int64_t s0 = lo[bi * t + ti], s1 = ti + 1;
      Scores(p, h.q.data() + ti * hd, h.kt.data(), s0, s1, t, hd, scale);
      T mx = *std::max_element(p + s0, p + s1), sum = 0;
      for (int64_t s = s0; s < s1; ++s) p[s] = FastExp(p[s] - mx);
      for (int64_t s = s0; s < s1; ++s) sum += p[s];
      T* o = out + Row(bi, ti, hi, t, nh, hd);
      std::fill(o, o + hd, T(0));
      T inv = T(1) / sum;
      for (int64_t s = s0; s < s1; ++s) {
        const T* vs = h.v.data() + s * hd;
        T w = p[s] * inv;
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
    HeadSlice<T> h(t, hd);
    h.Load(q, k, v, bi, hi, t, nh, hd);
    T *p = h.p.data(), *dp = h.dp.data();
    for (int64_t ti = 0; ti < t; ++ti) {
      int64_t r = Row(bi, ti, hi, t, nh, hd), s0 = lo[bi * t + ti], s1 = ti + 1;
      const T* qt = h.q.data() + ti * hd;
      const T* go = dout + r;
      T d = 0, l = lse[bh * t + ti];
      for (int64_t j = 0; j < hd; ++j) d += go[j] * out[r + j];
      Scores(p, qt, h.kt.data(), s0, s1, t, hd, scale);
      for (int64_t s = s0; s < s1; ++s) p[s] = FastExp(p[s] - l);
      Scores(dp, go, h.vt.data(), s0, s1, t, hd, T(1));
      for (int64_t s = s0; s < s1; ++s) dp[s] = p[s] * (dp[s] - d) * scale;
      for (int64_t s = s0; s < s1; ++s) {
        T* dks = dk + Row(bi, s, hi, t, nh, hd);
        T* dvs = dv + Row(bi, s, hi, t, nh, hd);
        const T* ks = h.k.data() + s * hd;
        for (int64_t j = 0; j < hd; ++j) {
          dq[r + j] += dp[s] * ks[j];
          dks[j] += dp[s] * qt[j];
          dvs[j] += p[s] * go[j];
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
