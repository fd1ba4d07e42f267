// Attention kernels (see attention.h for the method). Layout: q, k, v, out, dq, dk, dv are
// (B, T, NH, HD): token (b, t) of head h starts at ((b·T + t)·NH + h)·HD, so one head of one
// sequence is a strided matrix with row stride NH·HD. lse and D are (B, NH, T).
#include <mma.h>

#include <climits>
#include <cstdint>

#include "trainer/cuda/attention.h"
#include "trainer/cuda/attention_mma.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/kernel_util.cuh"

namespace ablate::cuda {
namespace {

namespace wmma = nvcuda::wmma;
using kernel::AllowDynamicSmem;
using kernel::FromFloat;
using kernel::ToFloat;
using kernel::WarpSum;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// ---- Row sums D = rowsum(dout ⊙ out), shared by both backward paths -----------------------

constexpr int kWarps = 4;  // warps per block, every kernel here
constexpr int kThreads = 32 * kWarps;

__global__ void RowDotKernel(float* d, const bf16* dout, const bf16* out, int64_t b, int64_t t,
                             int64_t nh, int64_t hd) {
  int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;  // (bi·T + ti)·NH + hi
  int lane = threadIdx.x % 32;
  if (row >= b * t * nh) return;
  float s = 0.f;
  for (int64_t j = lane; j < hd; j += 32) {
    s += ToFloat(dout[row * hd + j]) * ToFloat(out[row * hd + j]);
  }
  s = WarpSum(s);
  int64_t hi = row % nh, bt = row / nh;
  if (lane == 0) d[((bt / t) * nh + hi) * t + bt % t] = s;
}

// ---- Warp-per-query kernels (any head_dim) ------------------------------------------------
// One warp per query (or key) row; each lane owns channels lane, lane + 32, ... of the row's
// accumulators in shared memory, so no lane ever reads another lane's accumulator.

__global__ void __launch_bounds__(kThreads)
    WarpForwardKernel(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                      const int32_t* lo, int64_t b, int64_t t, int64_t nh, int64_t hd,
                      float scale) {
  extern __shared__ float warp_smem[];  // (kWarps, hd)
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t row = int64_t(blockIdx.x) * kWarps + warp;
  if (row >= b * t * nh) return;
  float* acc = warp_smem + warp * hd;
  int64_t hi = row % nh, bt = row / nh, ti = bt % t, bi = bt / t;
  const bf16* qr = q + row * hd;
  for (int64_t j = lane; j < hd; j += 32) acc[j] = 0.f;
  float m = -INFINITY, l = 0.f;
  for (int64_t s = lo[bi * t + ti]; s <= ti; ++s) {
    int64_t kr = ((bi * t + s) * nh + hi) * hd;
    float dot = 0.f;
    for (int64_t j = lane; j < hd; j += 32) dot += ToFloat(qr[j]) * ToFloat(k[kr + j]);
    float sc = WarpSum(dot) * scale;
    float m_new = fmaxf(m, sc);
    float alpha = expf(m - m_new), p = expf(sc - m_new);
    l = l * alpha + p;
    for (int64_t j = lane; j < hd; j += 32) acc[j] = acc[j] * alpha + p * ToFloat(v[kr + j]);
    m = m_new;
  }
  float inv = 1.f / l;
  for (int64_t j = lane; j < hd; j += 32) out[row * hd + j] = FromFloat<bf16>(acc[j] * inv);
  if (lane == 0) lse[(bi * nh + hi) * t + ti] = m + logf(l);
}

// dq of one query row: Σ over its keys of ds·k, ds = p·(dout·v − D)·scale.
__global__ void __launch_bounds__(kThreads)
    WarpBackwardDqKernel(float* dq, const bf16* dout, const bf16* q, const bf16* k, const bf16* v,
                         const float* lse, const float* d, const int32_t* lo, int64_t b, int64_t t,
                         int64_t nh, int64_t hd, float scale) {
  extern __shared__ float warp_smem[];  // (kWarps, hd)
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t row = int64_t(blockIdx.x) * kWarps + warp;
  if (row >= b * t * nh) return;
  float* acc = warp_smem + warp * hd;
  int64_t hi = row % nh, bt = row / nh, ti = bt % t, bi = bt / t;
  int64_t stat = (bi * nh + hi) * t + ti;
  float row_lse = lse[stat], row_d = d[stat];
  for (int64_t j = lane; j < hd; j += 32) acc[j] = 0.f;
  for (int64_t s = lo[bi * t + ti]; s <= ti; ++s) {
    int64_t kr = ((bi * t + s) * nh + hi) * hd;
    float qk = 0.f, dv = 0.f;
    for (int64_t j = lane; j < hd; j += 32) {
      qk += ToFloat(q[row * hd + j]) * ToFloat(k[kr + j]);
      dv += ToFloat(dout[row * hd + j]) * ToFloat(v[kr + j]);
    }
    float p = expf(WarpSum(qk) * scale - row_lse);
    float ds = p * (WarpSum(dv) - row_d) * scale;
    for (int64_t j = lane; j < hd; j += 32) acc[j] += ds * ToFloat(k[kr + j]);
  }
  for (int64_t j = lane; j < hd; j += 32) dq[row * hd + j] = acc[j];
}

// dk, dv of one key row: Σ over the queries that see it (t ≥ s while lo(t) ≤ s; lo is
// non-decreasing, so the first query with lo(t) > s ends the range).
__global__ void __launch_bounds__(kThreads)
    WarpBackwardDkvKernel(float* dk, float* dv, const bf16* dout, const bf16* q, const bf16* k,
                          const bf16* v, const float* lse, const float* d, const int32_t* lo,
                          int64_t b, int64_t t, int64_t nh, int64_t hd, float scale) {
  extern __shared__ float warp_smem[];  // (kWarps, 2, hd)
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t row = int64_t(blockIdx.x) * kWarps + warp;  // the key's row
  if (row >= b * t * nh) return;
  float* acc_k = warp_smem + warp * 2 * hd;
  float* acc_v = acc_k + hd;
  int64_t hi = row % nh, bt = row / nh, si = bt % t, bi = bt / t;
  for (int64_t j = lane; j < hd; j += 32) acc_k[j] = acc_v[j] = 0.f;
  for (int64_t ti = si; ti < t && lo[bi * t + ti] <= si; ++ti) {
    int64_t qr = ((bi * t + ti) * nh + hi) * hd;
    int64_t stat = (bi * nh + hi) * t + ti;
    float qk = 0.f, dov = 0.f;
    for (int64_t j = lane; j < hd; j += 32) {
      qk += ToFloat(q[qr + j]) * ToFloat(k[row * hd + j]);
      dov += ToFloat(dout[qr + j]) * ToFloat(v[row * hd + j]);
    }
    float p = expf(WarpSum(qk) * scale - lse[stat]);
    float ds = p * (WarpSum(dov) - d[stat]) * scale;
    for (int64_t j = lane; j < hd; j += 32) {
      acc_v[j] += p * ToFloat(dout[qr + j]);
      acc_k[j] += ds * ToFloat(q[qr + j]);
    }
  }
  for (int64_t j = lane; j < hd; j += 32) {
    dk[row * hd + j] = acc_k[j];
    dv[row * hd + j] = acc_v[j];
  }
}

// ---- Tiled tensor-core kernels (head_dim 64 or 128) ---------------------------------------
// Tiles of kTile query rows × kTile keys; warp w owns rows [16w, 16w + 16) of whatever it
// computes. Shared-memory row strides are padded (+8 bf16, +4 floats) against bank conflicts
// and keep every 16×16 fragment 32-byte aligned, as wmma requires.

constexpr int kTile = 64;
constexpr int kLdS = kTile + 4;  // floats, score-like tiles (kTile × kTile)
constexpr int kLdP = kTile + 8;  // bf16, probability-like tiles (kTile × kTile)

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

template <int HD>
struct TileShape {
  static_assert(HD % 16 == 0, "tiles need head_dim a multiple of 16");
  static constexpr int kLdH = HD + 8;  // bf16, (kTile × HD) operand tiles
  static constexpr int kLdO = HD + 4;  // floats, (kTile × HD) accumulators
  static constexpr int kHalfBytes = kTile * kLdH * 2;
  static constexpr int kScoreBytes = kTile * kLdS * 4;
  static constexpr int kProbBytes = kTile * kLdP * 2;
  static constexpr int kStatBytes = 4 * kTile * 4;
};

// Row `tok` of one head's (T, HD) matrix, rows NH·HD apart.
struct HeadMatrix {
  const bf16* base;  // token 0 of (b, h)
  int64_t stride;    // NH·HD
};

__device__ __forceinline__ HeadMatrix Head(const bf16* x, int64_t bi, int64_t hi, int64_t t,
                                           int64_t nh, int64_t hd) {
  return {x + (bi * t * nh + hi) * hd, nh * hd};
}

// dst (kTile, HD) in shared memory = rows [tok0, tok0 + kTile) of m; rows outside [0, t) are 0.
// 16-byte loads: REQUIRES 16-byte aligned tensors (checked by the launcher).
template <int HD>
__device__ __forceinline__ void LoadTile(bf16* dst, HeadMatrix m, int64_t tok0, int64_t t) {
  constexpr int kVecs = HD / 8;
  for (int i = threadIdx.x; i < kTile * kVecs; i += blockDim.x) {
    int r = i / kVecs, c = (i % kVecs) * 8;
    int64_t tok = tok0 + r;
    uint4 val = make_uint4(0u, 0u, 0u, 0u);
    if (tok >= 0 && tok < t) val = *reinterpret_cast<const uint4*>(m.base + tok * m.stride + c);
    *reinterpret_cast<uint4*>(dst + r * TileShape<HD>::kLdH + c) = val;
  }
}

// out (16, kTile) floats, ld kLdS = a (16 rows of a (·, HD) tile) · bᵀ (b a (kTile, HD) tile).
template <int HD>
__device__ __forceinline__ void WarpProductT(float* out, const bf16* a_rows, const bf16* b_tile) {
  constexpr int kLdH = TileShape<HD>::kLdH;
#pragma unroll
  for (int nt = 0; nt < kTile / 16; ++nt) {
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
#pragma unroll
    for (int kt = 0; kt < HD / 16; ++kt) {
      FragA fa;
      FragBT fb;
      wmma::load_matrix_sync(fa, a_rows + kt * 16, kLdH);
      wmma::load_matrix_sync(fb, b_tile + nt * 16 * kLdH + kt * 16, kLdH);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + nt * 16, acc, kLdS, wmma::mem_row_major);
  }
}

// acc[dt] (16, HD as HD/16 fragments) += p_rows (16, kTile) bf16 · b_tile (kTile, HD) bf16.
template <int HD>
__device__ __forceinline__ void WarpAccumulate(FragC (&acc)[HD / 16], const bf16* p_rows,
                                               const bf16* b_tile) {
#pragma unroll
  for (int dt = 0; dt < HD / 16; ++dt) {
#pragma unroll
    for (int kt = 0; kt < kTile / 16; ++kt) {
      FragA fa;
      FragB fb;
      wmma::load_matrix_sync(fa, p_rows + kt * 16, kLdP);
      wmma::load_matrix_sync(fb, b_tile + kt * 16 * TileShape<HD>::kLdH + dt * 16,
                             TileShape<HD>::kLdH);
      wmma::mma_sync(acc[dt], fa, fb, acc[dt]);
    }
  }
}

// acc[dt] += (columns [16w, 16w + 16) of p (kTile, kTile))ᵀ · b_tile (kTile, HD): the key-side
// products dV += Pᵀ dO and dK += dSᵀ Q for the 16 keys of warp w.
template <int HD>
__device__ __forceinline__ void WarpAccumulateT(FragC (&acc)[HD / 16], const bf16* p, int w,
                                                const bf16* b_tile) {
#pragma unroll
  for (int dt = 0; dt < HD / 16; ++dt) {
#pragma unroll
    for (int kt = 0; kt < kTile / 16; ++kt) {
      FragAT fa;
      FragB fb;
      wmma::load_matrix_sync(fa, p + kt * 16 * kLdP + w * 16, kLdP);
      wmma::load_matrix_sync(fb, b_tile + kt * 16 * TileShape<HD>::kLdH + dt * 16,
                             TileShape<HD>::kLdH);
      wmma::mma_sync(acc[dt], fa, fb, acc[dt]);
    }
  }
}

// Writes the warp's 16 rows (tile rows 16w..) of acc to rows [tok0 + 16w, ...) of the fp32
// (B, T, NH, HD) tensor `dst` (head base, row stride NH·HD), skipping rows ≥ t. `stage` is
// 16 × kLdS floats of shared memory private to the warp.
template <int HD>
__device__ __forceinline__ void WarpStoreRows(float* dst, int64_t stride, int64_t tok0, int64_t t,
                                              FragC (&acc)[HD / 16], float* stage) {
  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int dt = 0; dt < HD / 16; ++dt) {
    wmma::store_matrix_sync(stage, acc[dt], kLdS, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 256; i += 32) {
      int r = i / 16, c = i % 16;
      int64_t tok = tok0 + w * 16 + r;
      if (tok < t) dst[tok * stride + dt * 16 + c] = stage[r * kLdS + c];
    }
    __syncwarp();
  }
}

// Row statistics of one tile of queries: whether the row exists, its first visible key, and
// (backward) lse in log2 units and D.
struct RowStats {
  float* lse2;
  float* d;
  int* lo;
};

// ---- Tiled forward -------------------------------------------------------------------------

template <int HD>
struct ForwardSmem {
  using S = TileShape<HD>;
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + S::kHalfBytes;
  static constexpr int kV = kK + S::kHalfBytes;
  static constexpr int kO = kV + S::kHalfBytes;
  static constexpr int kS = kO + kTile * S::kLdO * 4;
  static constexpr int kP = kS + S::kScoreBytes;
  static constexpr int kStats = kP + S::kProbBytes;  // m, l, alpha (floats), lo (int)
  static constexpr int kBytes = kStats + S::kStatBytes;
};

// The online-softmax step for the warp's rows over one key tile [kb, kb + kTile): scores (in
// s_rows) → probabilities (p_rows, bf16), running max m (log2 units) and sum l, and the factor
// alpha by which the rows' accumulated output must shrink. Two lanes per row, 32 keys each.
__device__ __forceinline__ void WarpOnlineSoftmax(const float* s_rows, bf16* p_rows, float* m,
                                                  float* l, float* alpha, const int* lo,
                                                  int64_t row0_tok, int64_t kb, int64_t t,
                                                  float scale2) {
  int lane = threadIdx.x % 32, r = lane / 2, c0 = (lane % 2) * 32;
  int64_t tok = row0_tok + r;
  const float* s = s_rows + r * kLdS;
  float mx = -INFINITY;
  for (int c = c0; c < c0 + 32; ++c) {
    int64_t key = kb + c;
    if (tok < t && key >= lo[r] && key <= tok) mx = fmaxf(mx, s[c] * scale2);
  }
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  float m_old = m[r], m_new = fmaxf(m_old, mx);
  float a = m_new == -INFINITY ? 1.f : exp2f(m_old - m_new);
  float sum = 0.f;
  for (int c = c0; c < c0 + 32; ++c) {
    int64_t key = kb + c;
    bool ok = tok < t && key >= lo[r] && key <= tok;
    float p = ok ? exp2f(s[c] * scale2 - m_new) : 0.f;
    p_rows[r * kLdP + c] = FromFloat<bf16>(p);
    sum += p;
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  __syncwarp();  // both lanes of a row have read m[r] before it changes
  if (lane % 2 == 0) {
    m[r] = m_new;
    l[r] = l[r] * a + sum;
    alpha[r] = a;
  }
  __syncwarp();
}

template <int HD>
__global__ void __launch_bounds__(kThreads)
    TiledForwardKernel(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                       const int32_t* lo, int64_t t, int64_t nh, float scale) {
  using L = ForwardSmem<HD>;
  constexpr int kLdH = TileShape<HD>::kLdH, kLdO = TileShape<HD>::kLdO;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* s_q = reinterpret_cast<bf16*>(smem + L::kQ);
  bf16* s_k = reinterpret_cast<bf16*>(smem + L::kK);
  bf16* s_v = reinterpret_cast<bf16*>(smem + L::kV);
  float* s_o = reinterpret_cast<float*>(smem + L::kO);
  float* s_s = reinterpret_cast<float*>(smem + L::kS);
  bf16* s_p = reinterpret_cast<bf16*>(smem + L::kP);
  float* s_m = reinterpret_cast<float*>(smem + L::kStats);
  float* s_l = s_m + kTile;
  float* s_alpha = s_l + kTile;
  int* s_lo = reinterpret_cast<int*>(s_alpha + kTile);
  __shared__ int64_t key_range[2];  // first and last key any row of the tile sees

  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t t0 = int64_t(blockIdx.x) * kTile, hi = blockIdx.y, bi = blockIdx.z;
  int64_t rows = t - t0 < kTile ? t - t0 : kTile;
  LoadTile<HD>(s_q, Head(q, bi, hi, t, nh, HD), t0, t);
  for (int i = threadIdx.x; i < kTile * kLdO; i += blockDim.x) s_o[i] = 0.f;
  for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
    s_m[r] = -INFINITY;
    s_l[r] = 0.f;
    s_lo[r] = r < rows ? lo[bi * t + t0 + r] : INT_MAX;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int64_t first = t0;
    for (int r = 0; r < rows; ++r) first = s_lo[r] < first ? s_lo[r] : first;
    key_range[0] = first;
    key_range[1] = t0 + rows - 1;
  }
  __syncthreads();
  float scale2 = scale * kLog2e;
  for (int64_t kb = key_range[0]; kb <= key_range[1]; kb += kTile) {
    __syncthreads();  // every warp is done with the previous K and V tiles
    LoadTile<HD>(s_k, Head(k, bi, hi, t, nh, HD), kb, t);
    LoadTile<HD>(s_v, Head(v, bi, hi, t, nh, HD), kb, t);
    __syncthreads();
    float* s_rows = s_s + w * 16 * kLdS;
    bf16* p_rows = s_p + w * 16 * kLdP;
    WarpProductT<HD>(s_rows, s_q + w * 16 * kLdH, s_k);
    __syncwarp();
    WarpOnlineSoftmax(s_rows, p_rows, s_m + w * 16, s_l + w * 16, s_alpha + w * 16, s_lo + w * 16,
                      t0 + w * 16, kb, t, scale2);
    float* o_rows = s_o + w * 16 * kLdO;
    for (int i = lane; i < 16 * HD; i += 32)
      o_rows[(i / HD) * kLdO + i % HD] *= s_alpha[w * 16 + i / HD];
    __syncwarp();
#pragma unroll
    for (int dt = 0; dt < HD / 16; ++dt) {
      FragC acc;
      wmma::load_matrix_sync(acc, o_rows + dt * 16, kLdO, wmma::mem_row_major);
#pragma unroll
      for (int kt = 0; kt < kTile / 16; ++kt) {
        FragA fa;
        FragB fb;
        wmma::load_matrix_sync(fa, p_rows + kt * 16, kLdP);
        wmma::load_matrix_sync(fb, s_v + kt * 16 * kLdH + dt * 16, kLdH);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(o_rows + dt * 16, acc, kLdO, wmma::mem_row_major);
    }
    __syncwarp();
  }
  int64_t stride = nh * HD;
  bf16* out_head = out + (bi * t * nh + hi) * HD;
  for (int i = lane; i < 16 * HD; i += 32) {
    int r = w * 16 + i / HD, c = i % HD;
    if (r < rows) out_head[(t0 + r) * stride + c] = FromFloat<bf16>(s_o[r * kLdO + c] / s_l[r]);
  }
  if (lane < 16) {
    int r = w * 16 + lane;
    if (r < rows) lse[(bi * nh + hi) * t + t0 + r] = s_m[r] * kLn2 + logf(s_l[r]);
  }
}

// ---- Tiled backward ------------------------------------------------------------------------

// kWithP: the dK/dV kernel keeps p as bf16 (for dV += pᵀ dout); the dQ kernel needs only ds,
// and without that tile fits two blocks per SM at head_dim 128.
template <int HD, bool kWithP>
struct BackwardSmem {
  using S = TileShape<HD>;
  static constexpr int kQ = 0;  // query-side tiles: q, dout
  static constexpr int kDo = kQ + S::kHalfBytes;
  static constexpr int kK = kDo + S::kHalfBytes;  // key-side tiles: k, v
  static constexpr int kV = kK + S::kHalfBytes;
  static constexpr int kS = kV + S::kHalfBytes;                  // scores (fp32)
  static constexpr int kG = kS + S::kScoreBytes;                 // dout·vᵀ (fp32)
  static constexpr int kP = kG + S::kScoreBytes;                 // p (bf16), kWithP only
  static constexpr int kDs = kP + (kWithP ? S::kProbBytes : 0);  // ds (bf16)
  static constexpr int kStats = kDs + S::kProbBytes;             // lse2, d (floats), lo (int)
  static constexpr int kBytes = kStats + S::kStatBytes;

  __device__ static bf16* Half(unsigned char* smem, int off) {
    return reinterpret_cast<bf16*>(smem + off);
  }
  __device__ static float* Float(unsigned char* smem, int off) {
    return reinterpret_cast<float*>(smem + off);
  }
};

// Loads lse (log2 units), D and lo of query rows [tok0, tok0 + kTile) into shared memory;
// rows ≥ t get lo = INT_MAX (they see no key).
__device__ __forceinline__ void LoadRowStats(RowStats st, const float* lse, const float* d,
                                             const int32_t* lo, int64_t bi, int64_t hi,
                                             int64_t tok0, int64_t t, int64_t nh) {
  for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
    int64_t tok = tok0 + r;
    bool ok = tok < t;
    int64_t stat = (bi * nh + hi) * t + tok;
    st.lse2[r] = ok ? lse[stat] * kLog2e : 0.f;
    st.d[r] = ok ? d[stat] : 0.f;
    st.lo[r] = ok ? lo[bi * t + tok] : INT_MAX;
  }
}

// For the warp's 16 query rows (tile rows 16w..) against keys [kb, kb + kTile): p = softmax
// probabilities recomputed from lse, ds = p·(dout·v − D)·scale, both stored as bf16 (p_rows,
// which may be null when p is not needed, and ds_rows). s_rows holds q·kᵀ and g_rows dout·vᵀ.
__device__ __forceinline__ void WarpProbsAndDs(const float* s_rows, const float* g_rows,
                                               bf16* p_rows, bf16* ds_rows, RowStats st,
                                               int64_t row0_tok, int64_t kb, int64_t t,
                                               float scale) {
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  float scale2 = scale * kLog2e;
  for (int i = lane; i < 16 * kTile; i += 32) {
    int r = i / kTile, c = i % kTile, sr = w * 16 + r;
    int64_t tok = row0_tok + r, key = kb + c;
    bool ok = tok < t && key >= st.lo[sr] && key <= tok;
    float p = ok ? exp2f(s_rows[r * kLdS + c] * scale2 - st.lse2[sr]) : 0.f;
    float ds = ok ? p * (g_rows[r * kLdS + c] - st.d[sr]) * scale : 0.f;
    if (p_rows != nullptr) p_rows[r * kLdP + c] = FromFloat<bf16>(p);
    ds_rows[r * kLdP + c] = FromFloat<bf16>(ds);
  }
  __syncwarp();
}

// dK, dV for one key tile [k0, k0 + kTile), over query tiles [k0, ...) until lo passes the
// tile's last key. Warp w accumulates keys 16w.. in registers.
template <int HD>
__global__ void __launch_bounds__(kThreads)
    TiledBackwardDkvKernel(float* dk, float* dv, const bf16* dout, const bf16* q, const bf16* k,
                           const bf16* v, const float* lse, const float* d, const int32_t* lo,
                           int64_t t, int64_t nh, float scale) {
  using L = BackwardSmem<HD, true>;
  constexpr int kLdH = TileShape<HD>::kLdH;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16 *s_q = L::Half(smem, L::kQ), *s_do = L::Half(smem, L::kDo);
  bf16 *s_k = L::Half(smem, L::kK), *s_v = L::Half(smem, L::kV);
  float *s_s = L::Float(smem, L::kS), *s_g = L::Float(smem, L::kG);
  bf16 *s_p = L::Half(smem, L::kP), *s_ds = L::Half(smem, L::kDs);
  float* stats = L::Float(smem, L::kStats);
  RowStats st{stats, stats + kTile, reinterpret_cast<int*>(stats + 2 * kTile)};

  int w = threadIdx.x / 32;
  int64_t k0 = int64_t(blockIdx.x) * kTile, hi = blockIdx.y, bi = blockIdx.z;
  int64_t k_last = (t - 1 < k0 + kTile - 1) ? t - 1 : k0 + kTile - 1;
  LoadTile<HD>(s_k, Head(k, bi, hi, t, nh, HD), k0, t);
  LoadTile<HD>(s_v, Head(v, bi, hi, t, nh, HD), k0, t);
  FragC acc_k[HD / 16], acc_v[HD / 16];
#pragma unroll
  for (int dt = 0; dt < HD / 16; ++dt) {
    wmma::fill_fragment(acc_k[dt], 0.f);
    wmma::fill_fragment(acc_v[dt], 0.f);
  }
  for (int64_t qb = k0; qb < t; qb += kTile) {
    if (lo[bi * t + qb] > k_last) break;  // same value in every thread: a uniform exit
    __syncthreads();  // previous query tile fully consumed (and K, V loaded, first time)
    LoadTile<HD>(s_q, Head(q, bi, hi, t, nh, HD), qb, t);
    LoadTile<HD>(s_do, Head(dout, bi, hi, t, nh, HD), qb, t);
    LoadRowStats(st, lse, d, lo, bi, hi, qb, t, nh);
    __syncthreads();
    WarpProductT<HD>(s_s + w * 16 * kLdS, s_q + w * 16 * kLdH, s_k);
    WarpProductT<HD>(s_g + w * 16 * kLdS, s_do + w * 16 * kLdH, s_v);
    __syncwarp();
    WarpProbsAndDs(s_s + w * 16 * kLdS, s_g + w * 16 * kLdS, s_p + w * 16 * kLdP,
                   s_ds + w * 16 * kLdP, st, qb + w * 16, k0, t, scale);
    __syncthreads();  // every query row's p and ds are in place
    WarpAccumulateT<HD>(acc_v, s_p, w, s_do);
    WarpAccumulateT<HD>(acc_k, s_ds, w, s_q);
  }
  __syncthreads();  // s_s is reused as staging below
  int64_t stride = nh * HD;
  float* stage = s_s + w * 16 * kLdS;
  WarpStoreRows<HD>(dk + (bi * t * nh + hi) * HD, stride, k0, t, acc_k, stage);
  WarpStoreRows<HD>(dv + (bi * t * nh + hi) * HD, stride, k0, t, acc_v, stage);
}

// dQ for one query tile, over the same key range as the forward. Warp w accumulates rows 16w..
template <int HD>
__global__ void __launch_bounds__(kThreads)
    TiledBackwardDqKernel(float* dq, const bf16* dout, const bf16* q, const bf16* k, const bf16* v,
                          const float* lse, const float* d, const int32_t* lo, int64_t t,
                          int64_t nh, float scale) {
  using L = BackwardSmem<HD, false>;
  constexpr int kLdH = TileShape<HD>::kLdH;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16 *s_q = L::Half(smem, L::kQ), *s_do = L::Half(smem, L::kDo);
  bf16 *s_k = L::Half(smem, L::kK), *s_v = L::Half(smem, L::kV);
  float *s_s = L::Float(smem, L::kS), *s_g = L::Float(smem, L::kG);
  bf16* s_ds = L::Half(smem, L::kDs);
  float* stats = L::Float(smem, L::kStats);
  RowStats st{stats, stats + kTile, reinterpret_cast<int*>(stats + 2 * kTile)};
  __shared__ int64_t key_range[2];

  int w = threadIdx.x / 32;
  int64_t t0 = int64_t(blockIdx.x) * kTile, hi = blockIdx.y, bi = blockIdx.z;
  int64_t rows = t - t0 < kTile ? t - t0 : kTile;
  LoadTile<HD>(s_q, Head(q, bi, hi, t, nh, HD), t0, t);
  LoadTile<HD>(s_do, Head(dout, bi, hi, t, nh, HD), t0, t);
  LoadRowStats(st, lse, d, lo, bi, hi, t0, t, nh);
  __syncthreads();
  if (threadIdx.x == 0) {
    int64_t first = t0;
    for (int r = 0; r < rows; ++r) first = st.lo[r] < first ? st.lo[r] : first;
    key_range[0] = first;
    key_range[1] = t0 + rows - 1;
  }
  FragC acc[HD / 16];
#pragma unroll
  for (int dt = 0; dt < HD / 16; ++dt) wmma::fill_fragment(acc[dt], 0.f);
  __syncthreads();
  for (int64_t kb = key_range[0]; kb <= key_range[1]; kb += kTile) {
    __syncthreads();  // every warp is done with the previous K and V tiles
    LoadTile<HD>(s_k, Head(k, bi, hi, t, nh, HD), kb, t);
    LoadTile<HD>(s_v, Head(v, bi, hi, t, nh, HD), kb, t);
    __syncthreads();
    WarpProductT<HD>(s_s + w * 16 * kLdS, s_q + w * 16 * kLdH, s_k);
    WarpProductT<HD>(s_g + w * 16 * kLdS, s_do + w * 16 * kLdH, s_v);
    __syncwarp();
    WarpProbsAndDs(s_s + w * 16 * kLdS, s_g + w * 16 * kLdS, nullptr, s_ds + w * 16 * kLdP, st,
                   t0 + w * 16, kb, t, scale);
    WarpAccumulate<HD>(acc, s_ds + w * 16 * kLdP, s_k);
  }
  __syncwarp();
  WarpStoreRows<HD>(dq + (bi * t * nh + hi) * HD, nh * HD, t0, t, acc, s_s + w * 16 * kLdS);
}

// ---- Launch helpers ------------------------------------------------------------------------

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// kAuto's kernels where the shape allows: the verified WMMA ones until a GPU has passed the mma
// kernels' tests (bench/trainer_gpu/NOTES.md); then this one line becomes AttentionImpl::kMma
// (and CudaAttentionChoice's expectation with it).
constexpr AttentionImpl kAutoWhereTiled = AttentionImpl::kTiled;

// Which kernels run: kAuto becomes kAutoWhereTiled for head_dim 64 or 128 with 16-byte aligned
// tensors and kWarp otherwise; kTiled or kMma on another shape is an Error saying why.
Result<AttentionImpl> Choose(AttentionImpl impl, int64_t hd,
                             std::initializer_list<const void*> ptrs) {
  if (impl == AttentionImpl::kWarp) return AttentionImpl::kWarp;
  bool shape = hd == 64 || hd == 128;
  bool aligned = true;
  for (const void* p : ptrs) aligned = aligned && Aligned16(p);
  if (shape && aligned) return impl == AttentionImpl::kAuto ? kAutoWhereTiled : impl;
  if (impl == AttentionImpl::kAuto) return AttentionImpl::kWarp;
  return Error{std::string("attention: the ") + AttentionImplName(impl) +
                   " kernels need head_dim 64 or 128 and 16-byte aligned tensors (head_dim " +
                   std::to_string(hd) + ")",
               ""};
}

constexpr const char* kTiledKernels = "attention: a tile";

dim3 TileGrid(int64_t b, int64_t t, int64_t nh) {
  return dim3(unsigned((t + kTile - 1) / kTile), unsigned(nh), unsigned(b));
}

unsigned RowGrid(int64_t rows) { return unsigned((rows + kWarps - 1) / kWarps); }

template <int HD>
Status TiledForward(CudaContext& ctx, bf16* out, float* lse, const bf16* q, const bf16* k,
                    const bf16* v, const int32_t* lo, int64_t b, int64_t t, int64_t nh,
                    float scale) {
  constexpr int kBytes = ForwardSmem<HD>::kBytes;
  ABLATE_RETURN_IF_ERROR(AllowDynamicSmem(ctx, TiledForwardKernel<HD>, kBytes, kTiledKernels));
  TiledForwardKernel<HD>
      <<<TileGrid(b, t, nh), kThreads, kBytes, ctx.stream()>>>(out, lse, q, k, v, lo, t, nh, scale);
  ABLATE_CUDA_LAUNCH_CHECK("TiledForwardKernel");
  return {};
}

template <int HD>
Status TiledBackward(CudaContext& ctx, float* dq, float* dk, float* dv, const bf16* dout,
                     const bf16* q, const bf16* k, const bf16* v, const float* lse, const float* d,
                     const int32_t* lo, int64_t b, int64_t t, int64_t nh, float scale) {
  constexpr int kDkvBytes = BackwardSmem<HD, true>::kBytes;
  constexpr int kDqBytes = BackwardSmem<HD, false>::kBytes;
  ABLATE_RETURN_IF_ERROR(
      AllowDynamicSmem(ctx, TiledBackwardDkvKernel<HD>, kDkvBytes, kTiledKernels));
  ABLATE_RETURN_IF_ERROR(AllowDynamicSmem(ctx, TiledBackwardDqKernel<HD>, kDqBytes, kTiledKernels));
  TiledBackwardDkvKernel<HD><<<TileGrid(b, t, nh), kThreads, kDkvBytes, ctx.stream()>>>(
      dk, dv, dout, q, k, v, lse, d, lo, t, nh, scale);
  ABLATE_CUDA_LAUNCH_CHECK("TiledBackwardDkvKernel");
  TiledBackwardDqKernel<HD><<<TileGrid(b, t, nh), kThreads, kDqBytes, ctx.stream()>>>(
      dq, dout, q, k, v, lse, d, lo, t, nh, scale);
  ABLATE_CUDA_LAUNCH_CHECK("TiledBackwardDqKernel");
  return {};
}

// Dynamic shared memory of the warp kernels: `per_warp` floats per warp.
Status WarpSmem(CudaContext& ctx, int64_t per_warp, int* bytes) {
  int64_t need = kWarps * per_warp * int64_t(sizeof(float));
  if (need > 48 * 1024) {
    return Error{"attention: head_dim " + std::to_string(per_warp) +
                     " is too large for the warp kernels (at most 1536)",
                 ""};
  }
  (void)ctx;
  *bytes = int(need);
  return {};
}

}  // namespace

Status attention_forward(CudaContext& ctx, bf16* out, float* lse, const bf16* q, const bf16* k,
                         const bf16* v, const int32_t* lo, int64_t b, int64_t t, int64_t nh,
                         int64_t hd, float scale, AttentionImpl impl) {
  if (b * t * nh == 0) return {};
  Result<AttentionImpl> chosen = Choose(impl, hd, {out, q, k, v});
  if (!chosen.ok()) return chosen.error();
  if (*chosen == AttentionImpl::kMma) {
    return mma_attention::Forward(ctx, out, lse, q, k, v, lo, b, t, nh, hd, scale);
  }
  if (*chosen == AttentionImpl::kTiled) {
    return hd == 64 ? TiledForward<64>(ctx, out, lse, q, k, v, lo, b, t, nh, scale)
                    : TiledForward<128>(ctx, out, lse, q, k, v, lo, b, t, nh, scale);
  }
  int bytes = 0;
  ABLATE_RETURN_IF_ERROR(WarpSmem(ctx, hd, &bytes));
  WarpForwardKernel<<<RowGrid(b * t * nh), kThreads, bytes, ctx.stream()>>>(out, lse, q, k, v, lo,
                                                                            b, t, nh, hd, scale);
  ABLATE_CUDA_LAUNCH_CHECK("WarpForwardKernel");
  return {};
}

Status attention_backward(CudaContext& ctx, float* dq, float* dk, float* dv, const bf16* dout,
                          const bf16* q, const bf16* k, const bf16* v, const bf16* out,
                          const float* lse, const int32_t* lo, float* d_scratch, int64_t b,
                          int64_t t, int64_t nh, int64_t hd, float scale, AttentionImpl impl) {
  if (b * t * nh == 0) return {};
  RowDotKernel<<<RowGrid(b * t * nh), kThreads, 0, ctx.stream()>>>(d_scratch, dout, out, b, t, nh,
                                                                   hd);
  ABLATE_CUDA_LAUNCH_CHECK("RowDotKernel");
  Result<AttentionImpl> chosen = Choose(impl, hd, {dout, q, k, v});
  if (!chosen.ok()) return chosen.error();
  if (*chosen == AttentionImpl::kMma) {
    return mma_attention::Backward(ctx, dq, dk, dv, dout, q, k, v, lse, d_scratch, lo, b, t, nh, hd,
                                   scale);
  }
  if (*chosen == AttentionImpl::kTiled) {
    return hd == 64 ? TiledBackward<64>(ctx, dq, dk, dv, dout, q, k, v, lse, d_scratch, lo, b, t,
                                        nh, scale)
                    : TiledBackward<128>(ctx, dq, dk, dv, dout, q, k, v, lse, d_scratch, lo, b, t,
                                         nh, scale);
  }
  int bytes = 0;
  ABLATE_RETURN_IF_ERROR(WarpSmem(ctx, hd, &bytes));
  WarpBackwardDqKernel<<<RowGrid(b * t * nh), kThreads, bytes, ctx.stream()>>>(
      dq, dout, q, k, v, lse, d_scratch, lo, b, t, nh, hd, scale);
  ABLATE_CUDA_LAUNCH_CHECK("WarpBackwardDqKernel");
  ABLATE_RETURN_IF_ERROR(WarpSmem(ctx, 2 * hd, &bytes));
  WarpBackwardDkvKernel<<<RowGrid(b * t * nh), kThreads, bytes, ctx.stream()>>>(
      dk, dv, dout, q, k, v, lse, d_scratch, lo, b, t, nh, hd, scale);
  ABLATE_CUDA_LAUNCH_CHECK("WarpBackwardDkvKernel");
  return {};
}

}  // namespace ablate::cuda
