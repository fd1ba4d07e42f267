// The mma attention kernels (method: attention_mma.h), written against a primitives policy P:
// the GPU's (DevicePrimitives, mma_primitives.cuh, inline PTX) or the CPU emulator's
// (tests/trainer/emulated/), which runs these same kernels thread by thread so that their
// indexing, masks and pipelining are tested on machines without a GPU. P provides Thread(),
// Block(), Smem(), Sync(), SyncCount(pred), ShflXor(v, mask), CpAsync16/CpAsync4(dst, src,
// valid), Commit(), WaitAllButOne(), WaitAll(), Ldsm4/Ldsm4T(r, p) and Mma(c, a, b0, b1).
//
// Layouts as in attention.cu: q, k, v, out, dq, dk, dv are (B, T, NH, HD), one head of one
// sequence a (T, HD) matrix with row stride NH·HD; lse and d are (B, NH, T). All shared memory
// is the launch's dynamic shared memory (k*Bytes below).
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .bf16): lane = 4·g + c. A (16×16): a0 row g,
// cols 2c, 2c+1; a1 row g+8, same cols; a2, a3 as a0, a1 at cols + 8. B (16×8): b0 rows (k)
// 2c, 2c+1 of col (n) g; b1 rows + 8. Accumulator (16×8 fp32): c0, c1 row g, cols 2c, 2c+1; c2,
// c3 row g+8. So accumulator n-tiles 2i and 2i+1 of a 16-row score block, rounded to bf16 pairs,
// are the A fragment of k-step i of the next product (PackA).
#ifndef ABLATE_TRAINER_CUDA_ATTENTION_MMA_KERNELS_CUH_
#define ABLATE_TRAINER_CUDA_ATTENTION_MMA_KERNELS_CUH_

#include <cuda_bf16.h>
#include <vector_functions.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "trainer/cuda/dtype.h"
#include "trainer/cuda/policy_util.cuh"

namespace ablate::cuda::mma_attention {

constexpr int kRows = 64;  // rows a block owns, and rows of every streamed tile
constexpr int kWarps = 4;  // warp w owns rows [16w, 16w + 16) of the block's rows
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <int HD>
struct Geo {
  static_assert(HD % 16 == 0 && HD <= 128, "head_dim a multiple of 16, at most 128");
  static constexpr int kLd = HD + 8;         // bf16 per shared row (+16 bytes: no bank conflicts)
  static constexpr int kTile = kRows * kLd;  // bf16 per (kRows, HD) tile
  static constexpr int kTileBytes = kTile * 2;
  static constexpr int kChunks = HD / 8;    // 16-byte pieces per row
  static constexpr int kKSteps = HD / 16;   // k-steps of a product over the head dims
  static constexpr int kDimTiles = HD / 8;  // n-tiles of an accumulator over the head dims
};

// What a query block (forward, dQ) keeps of its own rows: lo of each (INT_MAX past the end),
// and the first key, last key and largest lo of the block.
struct RowBlockSmem {
  int lo[kRows];
  int64_t range[3];
};

// Row statistics of one streamed query tile (dK/dV): lse, d and lo of its rows (zero past the
// end; the mask test checks the row against t).
struct TileStats {
  float lse[kRows];
  float d[kRows];
  int lo[kRows];
};

// Dynamic shared memory of each kernel: tiles first, then the small tables.
template <int HD>
constexpr int kForwardBytes = 5 * Geo<HD>::kTileBytes + int(sizeof(RowBlockSmem));
template <int HD>
constexpr int kDqBytes = 6 * Geo<HD>::kTileBytes + int(sizeof(RowBlockSmem));
template <int HD>
constexpr int kDkvBytes = 6 * Geo<HD>::kTileBytes + 2 * int(sizeof(TileStats));

// Two floats as a bf16 pair, round to nearest even; `lo` in the low half (the lower column).
__host__ __device__ __forceinline__ uint32_t Pack(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t bits;
  static_assert(sizeof(v) == sizeof(bits), "a bf16 pair is 32 bits");
  __builtin_memcpy(&bits, &v, sizeof(bits));
  return bits;
}

// One head of one sequence: row `tok` at base + tok·stride.
struct Head {
  const bf16* base;
  int64_t stride;  // NH·HD
};

__host__ __device__ __forceinline__ Head HeadOf(const bf16* x, int64_t bi, int64_t hi, int64_t t,
                                                int64_t nh, int64_t hd) {
  return {x + (bi * t * nh + hi) * hd, nh * hd};
}

// dst (kRows, HD), row stride kLd = rows [tok0, tok0 + kRows) of m, rows outside [0, t) zero.
// Asynchronous: part of the caller's next committed group.
template <int HD, class P>
__device__ __forceinline__ void LoadTileAsync(bf16* dst, Head m, int64_t tok0, int64_t t) {
  using G = Geo<HD>;
  for (int i = P::Thread(); i < kRows * G::kChunks; i += kThreads) {
    int r = i / G::kChunks, c = (i % G::kChunks) * 8;
    int64_t tok = tok0 + r;
    bool ok = tok >= 0 && tok < t;
    P::CpAsync16(dst + r * G::kLd + c, m.base + (ok ? tok : 0) * m.stride + c, ok);
  }
}

// A operand: rows [r0, r0 + 16), cols [c0, c0 + 16) of a row-major tile.
template <int HD, class P>
__device__ __forceinline__ void LoadA(uint32_t (&a)[4], const bf16* tile, int r0, int c0) {
  int lane = P::Thread() % 32;
  P::Ldsm4(a, tile + (r0 + lane % 8 + (lane / 8 % 2) * 8) * Geo<HD>::kLd + c0 + lane / 16 * 8);
}

// B operands of n-tiles [n0, n0 + 8) (b[0], b[1]) and [n0 + 8, n0 + 16) (b[2], b[3]) for the
// k-step [k0, k0 + 16), from a tile whose rows are n (q·kᵀ: the key tile, rows are keys).
template <int HD, class P>
__device__ __forceinline__ void LoadBRowsN(uint32_t (&b)[4], const bf16* tile, int n0, int k0) {
  int lane = P::Thread() % 32;
  P::Ldsm4(b, tile + (n0 + lane % 8 + lane / 16 * 8) * Geo<HD>::kLd + k0 + (lane / 8 % 2) * 8);
}

// The same from a tile whose rows are k (p·v: the value tile, rows are keys); ldmatrix
// transposes.
template <int HD, class P>
__device__ __forceinline__ void LoadBRowsK(uint32_t (&b)[4], const bf16* tile, int k0, int n0) {
  int lane = P::Thread() % 32;
  P::Ldsm4T(b, tile + (k0 + lane % 8 + (lane / 8 % 2) * 8) * Geo<HD>::kLd + n0 + lane / 16 * 8);
}

// s (16 × 16·kPairs) = rows [r0, r0 + 16) of a_tile · (rows [n0, n0 + 16·kPairs) of b_tile)ᵀ,
// summed over HD. s is zeroed first.
template <int HD, int kPairs, class P>
__device__ __forceinline__ void ProductNT(float (&s)[2 * kPairs][4], const bf16* a_tile, int r0,
                                          const bf16* b_tile, int n0) {
#pragma unroll
  for (int j = 0; j < 2 * kPairs; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < Geo<HD>::kKSteps; ++kk) {
    uint32_t a[4];
    LoadA<HD, P>(a, a_tile, r0, kk * 16);
#pragma unroll
    for (int j = 0; j < kPairs; ++j) {
      uint32_t b[4];
      LoadBRowsN<HD, P>(b, b_tile, n0 + 16 * j, kk * 16);
      P::Mma(s[2 * j], a, b[0], b[1]);
      P::Mma(s[2 * j + 1], a, b[2], b[3]);
    }
  }
}

// acc (16 × HD) += a (16 × 16, registers) · rows [k0, k0 + 16) of tile (rows are k).
template <int HD, class P>
__device__ __forceinline__ void Accumulate(float (&acc)[Geo<HD>::kDimTiles][4],
                                           const uint32_t (&a)[4], const bf16* tile, int k0) {
#pragma unroll
  for (int j = 0; j < HD / 16; ++j) {
    uint32_t b[4];
    LoadBRowsK<HD, P>(b, tile, k0, 16 * j);
    P::Mma(acc[2 * j], a, b[0], b[1]);
    P::Mma(acc[2 * j + 1], a, b[2], b[3]);
  }
}

// The A fragment of columns [16i, 16i + 16) of a 16-row block held as accumulator n-tiles 2i
// (lo) and 2i + 1 (hi).
__host__ __device__ __forceinline__ void PackA(uint32_t (&a)[4], const float (&lo)[4],
                                               const float (&hi)[4]) {
  a[0] = Pack(lo[0], lo[1]);
  a[1] = Pack(lo[2], lo[3]);
  a[2] = Pack(hi[0], hi[1]);
  a[3] = Pack(hi[2], hi[3]);
}

// Writes the warp's 16 rows of acc (fp32) to rows [row0, row0 + 16) of the head matrix at
// `dst` (row stride `stride` floats), skipping rows ≥ t.
template <int HD, class P>
__device__ __forceinline__ void StoreRows(float* dst, int64_t stride, int64_t row0, int64_t t,
                                          const float (&acc)[Geo<HD>::kDimTiles][4]) {
  int lane = P::Thread() % 32, g = lane / 4, c = lane % 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    int64_t tok = row0 + g + 8 * half;
    if (tok >= t) continue;
#pragma unroll
    for (int j = 0; j < Geo<HD>::kDimTiles; ++j) {
      *reinterpret_cast<float2*>(dst + tok * stride + 8 * j + 2 * c) =
          make_float2(acc[j][2 * half], acc[j][2 * half + 1]);
    }
  }
}

// Two-stage pipeline over streamed tile pairs (key and value tiles, or query and dout tiles):
// stage s holds its pair's first tile at stages + 2s·kTile and its second right after.
// LoadPair puts rows [tok0, tok0 + kRows) of `first` and `second` into stage `stage` (part of the
// caller's next committed group). AdvancePair, at pair i of `pairs`, issues pair i + 1 (rows from
// next_tok) into the other stage, commits (with whatever else the caller issued), waits for
// pair i and synchronises the block; it returns pair i's first tile. Every thread calls it.
template <int HD, class P>
__device__ __forceinline__ void LoadPair(bf16* stages, int stage, Head first, Head second,
                                         int64_t tok0, int64_t t) {
  bf16* dst = stages + 2 * stage * Geo<HD>::kTile;
  LoadTileAsync<HD, P>(dst, first, tok0, t);
  LoadTileAsync<HD, P>(dst + Geo<HD>::kTile, second, tok0, t);
}

template <int HD, class P>
__device__ __forceinline__ const bf16* AdvancePair(bf16* stages, Head first, Head second, int i,
                                                   int pairs, int64_t next_tok, int64_t t) {
  if (i + 1 < pairs) LoadPair<HD, P>(stages, (i + 1) % 2, first, second, next_tok, t);
  P::Commit();
  P::WaitAllButOne();
  P::Sync();
  return stages + 2 * (i % 2) * Geo<HD>::kTile;
}

// What a block knows of its own 64 query rows: the keys any of them sees, and the largest lo
// (a key tile at or above it, and at or below every row, needs no mask).
struct QueryBlock {
  int64_t first_key, last_key, max_lo;
};

// rb->lo[r] = lo of row t0 + r (INT_MAX past the end); the block's key range. Every thread
// calls it; it synchronises the block.
template <class P>
__device__ __forceinline__ QueryBlock LoadQueryBlock(RowBlockSmem* rb, const int32_t* lo_seq,
                                                     int64_t t0, int64_t t) {
  int64_t rows = t - t0 < kRows ? t - t0 : kRows;
  for (int r = P::Thread(); r < kRows; r += kThreads)
    rb->lo[r] = r < rows ? lo_seq[t0 + r] : INT_MAX;
  P::Sync();
  if (P::Thread() == 0) {
    int64_t first = t0, most = 0;
    for (int r = 0; r < rows; ++r) {
      first = rb->lo[r] < first ? rb->lo[r] : first;
      most = rb->lo[r] > most ? rb->lo[r] : most;
    }
    rb->range[0] = first;
    rb->range[1] = t0 + rows - 1;
    rb->range[2] = most;
  }
  P::Sync();
  return {rb->range[0], rb->range[1], rb->range[2]};
}

// ---- Forward -------------------------------------------------------------------------------

// One block per 64 queries of one head: out and lse of those rows. Shared memory: the query
// tile, two stages of (key, value) tiles, the row table.
template <int HD, class P>
__global__ void __launch_bounds__(kThreads, 2)
    MmaForwardKernel(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                     const int32_t* lo, int64_t t, int64_t nh, float scale2) {
  using G = Geo<HD>;
  bf16* s_q = reinterpret_cast<bf16*>(P::Smem());
  bf16* s_kv = s_q + G::kTile;  // stage s: key tile at 2s, value tile at 2s + 1
  RowBlockSmem* rb = reinterpret_cast<RowBlockSmem*>(P::Smem() + 5 * G::kTileBytes);

  const int w = P::Thread() / 32, lane = P::Thread() % 32, g = lane / 4, c = lane % 4;
  const int64_t t0 = int64_t(P::Block().x) * kRows, hi = P::Block().y, bi = P::Block().z;
  const QueryBlock qb = LoadQueryBlock<P>(rb, lo + bi * t, t0, t);
  const Head kh = HeadOf(k, bi, hi, t, nh, HD), vh = HeadOf(v, bi, hi, t, nh, HD);
  LoadTileAsync<HD, P>(s_q, HeadOf(q, bi, hi, t, nh, HD), t0, t);
  LoadPair<HD, P>(s_kv, 0, kh, vh, qb.first_key, t);
  P::Commit();

  const int64_t tok[2] = {t0 + 16 * w + g, t0 + 16 * w + g + 8};
  const int row_lo[2] = {rb->lo[16 * w + g], rb->lo[16 * w + g + 8]};
  float o[G::kDimTiles][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // log2 units; l: this lane's part
  const int tiles = int((qb.last_key - qb.first_key) / kRows) + 1;
  for (int i = 0; i < tiles; ++i) {
    const int64_t kb = qb.first_key + int64_t(i) * kRows;
    const bf16* s_k = AdvancePair<HD, P>(s_kv, kh, vh, i, tiles, kb + kRows, t);
    const bf16* s_v = s_k + G::kTile;
    float s[8][4];
    ProductNT<HD, 4, P>(s, s_q, 16 * w, s_k, 0);
    const bool full = kb >= qb.max_lo && kb + kRows - 1 <= t0 && t0 + kRows <= t;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          int64_t key = kb + 8 * j + 2 * c + e;
          bool ok = full || (key >= row_lo[half] && key <= tok[half] && tok[half] < t);
          float x = ok ? s[j][2 * half + e] * scale2 : -INFINITY;
          s[j][2 * half + e] = x;
          mx = fmaxf(mx, x);
        }
      }
      mx = fmaxf(mx, P::ShflXor(mx, 1));
      mx = fmaxf(mx, P::ShflXor(mx, 2));
      float m_new = fmaxf(m[half], mx);
      float m_use = m_new == -INFINITY ? 0.f : m_new;  // a row that has seen no key yet
      float alpha = exp2f(m[half] - m_use);
      m[half] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float p = exp2f(s[j][2 * half + e] - m_use);
          s[j][2 * half + e] = p;
          sum += p;
        }
      }
      l[half] = l[half] * alpha + sum;
#pragma unroll
      for (int j = 0; j < G::kDimTiles; ++j) {
        o[j][2 * half] *= alpha;
        o[j][2 * half + 1] *= alpha;
      }
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t pa[4];
      PackA(pa, s[2 * kk], s[2 * kk + 1]);
      Accumulate<HD, P>(o, pa, s_v, 16 * kk);
    }
    P::Sync();  // every warp is done with this stage before it is loaded again
  }
  P::WaitAll();

  const int64_t stride = nh * HD;
  bf16* out_head = out + (bi * t * nh + hi) * HD;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float total = l[half];
    total += P::ShflXor(total, 1);
    total += P::ShflXor(total, 2);
    if (tok[half] >= t) continue;
    float inv = 1.f / total;
#pragma unroll
    for (int j = 0; j < G::kDimTiles; ++j) {
      *reinterpret_cast<uint32_t*>(out_head + tok[half] * stride + 8 * j + 2 * c) =
          Pack(o[j][2 * half] * inv, o[j][2 * half + 1] * inv);
    }
    if (c == 0) lse[(bi * nh + hi) * t + tok[half]] = m[half] * kLn2 + logf(total);
  }
}

// ---- Backward: dQ --------------------------------------------------------------------------

// One block per 64 queries of one head: dq of those rows, over the same keys as the forward.
// Shared memory: the query and dout tiles, two stages of (key, value) tiles, the row table.
template <int HD, class P>
__global__ void __launch_bounds__(kThreads, 2)
    MmaBackwardDqKernel(float* dq, const bf16* dout, const bf16* q, const bf16* k, const bf16* v,
                        const float* lse, const float* d, const int32_t* lo, int64_t t, int64_t nh,
                        float scale, float scale2) {
  using G = Geo<HD>;
  bf16* s_q = reinterpret_cast<bf16*>(P::Smem());
  bf16* s_do = s_q + G::kTile;
  bf16* s_kv = s_do + G::kTile;
  RowBlockSmem* rb = reinterpret_cast<RowBlockSmem*>(P::Smem() + 6 * G::kTileBytes);

  const int w = P::Thread() / 32, lane = P::Thread() % 32, g = lane / 4, c = lane % 4;
  const int64_t t0 = int64_t(P::Block().x) * kRows, hi = P::Block().y, bi = P::Block().z;
  const QueryBlock qb = LoadQueryBlock<P>(rb, lo + bi * t, t0, t);
  const Head kh = HeadOf(k, bi, hi, t, nh, HD), vh = HeadOf(v, bi, hi, t, nh, HD);
  LoadTileAsync<HD, P>(s_q, HeadOf(q, bi, hi, t, nh, HD), t0, t);
  LoadTileAsync<HD, P>(s_do, HeadOf(dout, bi, hi, t, nh, HD), t0, t);
  LoadPair<HD, P>(s_kv, 0, kh, vh, qb.first_key, t);
  P::Commit();

  const int64_t tok[2] = {t0 + 16 * w + g, t0 + 16 * w + g + 8};
  const int row_lo[2] = {rb->lo[16 * w + g], rb->lo[16 * w + g + 8]};
  float row_lse2[2], row_d[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    int64_t stat = (bi * nh + hi) * t + (tok[half] < t ? tok[half] : 0);
    row_lse2[half] = lse[stat] * kLog2e;
    row_d[half] = d[stat];
  }
  float acc[G::kDimTiles][4] = {};
  const int tiles = int((qb.last_key - qb.first_key) / kRows) + 1;
  for (int i = 0; i < tiles; ++i) {
    const int64_t kb = qb.first_key + int64_t(i) * kRows;
    const bf16* s_k = AdvancePair<HD, P>(s_kv, kh, vh, i, tiles, kb + kRows, t);
    const bf16* s_v = s_k + G::kTile;
    float s[8][4], dp[8][4];
    ProductNT<HD, 4, P>(s, s_q, 16 * w, s_k, 0);
    ProductNT<HD, 4, P>(dp, s_do, 16 * w, s_v, 0);
    const bool full = kb >= qb.max_lo && kb + kRows - 1 <= t0 && t0 + kRows <= t;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int half = e / 2;
        int64_t key = kb + 8 * j + 2 * c + e % 2;
        bool ok = full || (key >= row_lo[half] && key <= tok[half] && tok[half] < t);
        float p = ok ? exp2f(s[j][e] * scale2 - row_lse2[half]) : 0.f;
        s[j][e] = p * (dp[j][e] - row_d[half]) * scale;  // ds
      }
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t a[4];
      PackA(a, s[2 * kk], s[2 * kk + 1]);
      Accumulate<HD, P>(acc, a, s_k, 16 * kk);
    }
    P::Sync();
  }
  P::WaitAll();
  StoreRows<HD, P>(dq + (bi * t * nh + hi) * HD, nh * HD, t0 + 16 * w, t, acc);
}

// ---- Backward: dK, dV ----------------------------------------------------------------------

// Query tiles [k0, k0 + 64·n) hold every query that sees a key of [k0, k_last]: queries before
// k0 see none (causal), and lo is non-decreasing, so the first tile whose first query has
// lo > k_last ends them. Each thread tests one tile per round. Every thread calls it.
template <class P>
__device__ __forceinline__ int QueryTiles(const int32_t* lo_seq, int64_t k0, int64_t k_last,
                                          int64_t t) {
  int n = 0;
  for (;;) {
    int64_t first = k0 + (int64_t(n) + P::Thread()) * kRows;
    int seen = P::SyncCount(first < t && lo_seq[first] <= k_last);
    n += seen;
    if (seen < kThreads) return n;
  }
}

template <class P>
__device__ __forceinline__ void LoadStatsAsync(TileStats* st, const float* lse_head,
                                               const float* d_head, const int32_t* lo_seq,
                                               int64_t qb, int64_t t) {
  int r = P::Thread();
  if (r >= kRows) return;
  int64_t tok = qb + r;
  bool ok = tok < t;
  int64_t at = ok ? tok : 0;
  P::CpAsync4(&st->lse[r], lse_head + at, ok);
  P::CpAsync4(&st->d[r], d_head + at, ok);
  P::CpAsync4(&st->lo[r], lo_seq + at, ok);
}

// One block per 64 keys of one head: dk, dv of those rows, over the query tiles that see them.
// Warp w accumulates keys [16w, 16w + 16) in registers, 16 queries at a time. Shared memory:
// the key and value tiles, two stages of (query, dout) tiles, two stages of row statistics.
template <int HD, class P>
__global__ void __launch_bounds__(kThreads, 2)
    MmaBackwardDkvKernel(float* dk, float* dv, const bf16* dout, const bf16* q, const bf16* k,
                         const bf16* v, const float* lse, const float* d, const int32_t* lo,
                         int64_t t, int64_t nh, float scale, float scale2) {
  using G = Geo<HD>;
  bf16* s_k = reinterpret_cast<bf16*>(P::Smem());
  bf16* s_v = s_k + G::kTile;
  bf16* s_qd = s_v + G::kTile;  // stage s: query tile at 2s, dout tile at 2s + 1
  TileStats* s_stats = reinterpret_cast<TileStats*>(P::Smem() + 6 * G::kTileBytes);

  const int w = P::Thread() / 32, lane = P::Thread() % 32, g = lane / 4, c = lane % 4;
  const int64_t k0 = int64_t(P::Block().x) * kRows, hi = P::Block().y, bi = P::Block().z;
  const int64_t k_last = (t - 1 < k0 + kRows - 1) ? t - 1 : k0 + kRows - 1;
  const int32_t* lo_seq = lo + bi * t;
  const float* lse_head = lse + (bi * nh + hi) * t;
  const float* d_head = d + (bi * nh + hi) * t;
  const Head qh = HeadOf(q, bi, hi, t, nh, HD), doh = HeadOf(dout, bi, hi, t, nh, HD);
  const int tiles = QueryTiles<P>(lo_seq, k0, k_last, t);
  LoadTileAsync<HD, P>(s_k, HeadOf(k, bi, hi, t, nh, HD), k0, t);
  LoadTileAsync<HD, P>(s_v, HeadOf(v, bi, hi, t, nh, HD), k0, t);
  LoadPair<HD, P>(s_qd, 0, qh, doh, k0, t);
  LoadStatsAsync<P>(&s_stats[0], lse_head, d_head, lo_seq, k0, t);
  P::Commit();

  const int64_t key[2] = {k0 + 16 * w + g, k0 + 16 * w + g + 8};
  float acc_k[G::kDimTiles][4] = {}, acc_v[G::kDimTiles][4] = {};
  for (int i = 0; i < tiles; ++i) {
    const int64_t qb = k0 + int64_t(i) * kRows;
    if (i + 1 < tiles) {
      LoadStatsAsync<P>(&s_stats[(i + 1) % 2], lse_head, d_head, lo_seq, qb + kRows, t);
    }
    const bf16* s_q = AdvancePair<HD, P>(s_qd, qh, doh, i, tiles, qb + kRows, t);
    const bf16* s_do = s_q + G::kTile;
    const TileStats& st = s_stats[i % 2];
    const bool full = k0 + kRows - 1 <= qb && qb + kRows <= t && st.lo[kRows - 1] <= k0;
#pragma unroll
    for (int part = 0; part < kRows / 16; ++part) {  // queries [16·part, 16·part + 16)
      float p[2][4], ds[2][4];
      ProductNT<HD, 1, P>(p, s_k, 16 * w, s_q, 16 * part);    // (q·kᵀ)ᵀ for the warp's keys
      ProductNT<HD, 1, P>(ds, s_v, 16 * w, s_do, 16 * part);  // (dout·vᵀ)ᵀ
#pragma unroll
      for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int r = 16 * part + 8 * j + 2 * c + e % 2;  // the query's row in the tile
          int64_t tok = qb + r, kk = key[e / 2];
          bool ok = full || (kk >= st.lo[r] && kk <= tok && tok < t);
          float pe = ok ? exp2f(p[j][e] * scale2 - st.lse[r] * kLog2e) : 0.f;
          ds[j][e] = pe * (ds[j][e] - st.d[r]) * scale;
          p[j][e] = pe;
        }
      }
      uint32_t a[4];
      PackA(a, p[0], p[1]);
      Accumulate<HD, P>(acc_v, a, s_do, 16 * part);  // dv += pᵀ dout
      PackA(a, ds[0], ds[1]);
      Accumulate<HD, P>(acc_k, a, s_q, 16 * part);  // dk += dsᵀ q
    }
    P::Sync();
  }
  P::WaitAll();
  StoreRows<HD, P>(dk + (bi * t * nh + hi) * HD, nh * HD, k0 + 16 * w, t, acc_k);
  StoreRows<HD, P>(dv + (bi * t * nh + hi) * HD, nh * HD, k0 + 16 * w, t, acc_v);
}

}  // namespace ablate::cuda::mma_attention

#endif  // ABLATE_TRAINER_CUDA_ATTENTION_MMA_KERNELS_CUH_
