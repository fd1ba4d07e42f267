// Attention kernels: per (batch, head) slice, tiles of queries whose scores and softmax
// gradients are computed with GEMMs over the tile's key range (strided in place, no gathering).
#include "trainer/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "trainer/cpu/fast_exp.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/reduce.h"
#include "trainer/cpu/parallel.h"

namespace ablate::cpu {
namespace {

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

// Queries per tile. A tile's scores are one (kQueryTile, keys) block that stays in L2, and its
// products are GEMMs long enough for OpenBLAS's kernels (T = 256, HD = 32: 64 × 256 × 32).
constexpr int64_t kQueryTile = 64;

// One query tile [t0, t1) of one (batch, head) slice. Its keys are [k0, t1) with k0 the smallest
// lo of the tile; row r (query t0 + r) may see columns [lo(t) − k0, t − k0] of that range.
// Pointers address the slice's first element of q, k, v, out, …; rows are `ld` apart.
struct Tile {
  int64_t t0, t1, k0;
  int64_t rows() const { return t1 - t0; }
  int64_t keys() const { return t1 - k0; }
};

template <class T>
struct SliceArgs {
  const T *q, *k, *v;
  const int32_t* lo;  // (T) of this sequence
  int64_t ld, hd;
  T scale;
};

inline Tile MakeTile(const int32_t* lo, int64_t t0, int64_t t1) {
  int64_t k0 = t0;
  for (int64_t t = t0; t < t1; ++t) k0 = std::min<int64_t>(k0, lo[t]);
  return {t0, t1, k0};
}

// s (rows, keys) = scale · q_tile k_rangeᵀ.
template <class T>
void TileScores(T* s, const SliceArgs<T>& a, const Tile& tile) {
  Gemm<T>(Trans::kNo, Trans::kYes, tile.rows(), tile.keys(), a.hd, a.scale, a.q + tile.t0 * a.ld,
          a.ld, a.k + tile.k0 * a.ld, a.ld, T(0), s, tile.keys());
}

// Row r of a tile: visible columns [first, last] of the key range.
inline void VisibleColumns(const int32_t* lo, const Tile& tile, int64_t r, int64_t* first,
                           int64_t* last) {
  *first = lo[tile.t0 + r] - tile.k0;
  *last = tile.t0 + r - tile.k0;
}

// In place: row r of s becomes exp(s − shift) on its visible columns and 0 elsewhere.
template <class T>
void ExpRow(T* row, int64_t first, int64_t last, int64_t keys, T shift) {
  std::fill(row, row + first, T(0));
  for (int64_t j = first; j <= last; ++j) row[j] = FastExp(row[j] - shift);
  std::fill(row + last + 1, row + keys, T(0));
}

// Every row becomes exp(s − its max) over its visible columns (one exp per score: the softmax's
// 1/Σ is applied to the output rows instead, HD values rather than T); lse[r] = its
// log-sum-exp, inv_sum[r] = 1/Σ.
template <class T>
void ExpRows(T* s, T* lse, T* inv_sum, const int32_t* lo, const Tile& tile) {
  for (int64_t r = 0; r < tile.rows(); ++r) {
    int64_t first, last;
    VisibleColumns(lo, tile, r, &first, &last);
    T* row = s + r * tile.keys();
    T mx = RowMax(row + first, last - first + 1);
    ExpRow(row, first, last, tile.keys(), mx);
    T sum = LaneSum(row + first, last - first + 1);
    lse[r] = mx + std::log(sum);
    inv_sum[r] = T(1) / sum;
  }
}

template <class T>
void ForwardTile(T* out, T* lse, T* s, const SliceArgs<T>& a, const Tile& tile) {
  T inv_sum[kQueryTile];
  TileScores(s, a, tile);
  ExpRows(s, lse + tile.t0, inv_sum, a.lo, tile);
  T* o = out + tile.t0 * a.ld;
  Gemm<T>(Trans::kNo, Trans::kNo, tile.rows(), a.hd, tile.keys(), T(1), s, tile.keys(),
          a.v + tile.k0 * a.ld, a.ld, T(0), o, a.ld);
  for (int64_t r = 0; r < tile.rows(); ++r) {
    for (int64_t j = 0; j < a.hd; ++j) o[r * a.ld + j] *= inv_sum[r];
  }
}

// Calls fn(tile) for the query tiles of a sequence of t tokens.
template <class Fn>
void ForEachTile(const int32_t* lo, int64_t t, const Fn& fn) {
  for (int64_t t0 = 0; t0 < t; t0 += kQueryTile) fn(MakeTile(lo, t0, std::min(t, t0 + kQueryTile)));
}

}  // namespace

template <class T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v, const int32_t* lo,
                       int64_t b, int64_t t, int64_t nh, int64_t hd, T scale) {
  ParallelFor(b * nh, [&](int64_t bh) {
    int64_t bi = bh / nh, off = Row(bi, 0, bh % nh, t, nh, hd);
    SliceArgs<T> a{q + off, k + off, v + off, lo + bi * t, nh * hd, hd, scale};
    std::unique_ptr<T[]> s(new T[kQueryTile * t]);  // every element is written before read
    ForEachTile(a.lo, t, [&](const Tile& tile) {
      ForwardTile(out + off, lse + bh * t, s.get(), a, tile);
    });
  });
}

namespace {

// Gradient tensors of one slice, at its first element.
template <class T>
struct SliceGrads {
  T *dq, *dk, *dv;
  const T *dout, *out, *lse;
};

// With p = exp(scale·q kᵀ − lse) and D = rowsum(dout ⊙ out): ds = scale · p ⊙ (dout vᵀ − D),
// dq += ds k, dk += dsᵀ q, dv += pᵀ dout.
template <class T>
void BackwardTile(T* p, T* ds, const SliceArgs<T>& a, const SliceGrads<T>& g, const Tile& tile) {
  int64_t rows = tile.rows(), keys = tile.keys(), ld = a.ld;
  TileScores(p, a, tile);
  Gemm<T>(Trans::kNo, Trans::kYes, rows, keys, a.hd, T(1), g.dout + tile.t0 * ld, ld,
          a.v + tile.k0 * ld, ld, T(0), ds, keys);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t first, last, t = tile.t0 + r;
    VisibleColumns(a.lo, tile, r, &first, &last);
    T* pr = p + r * keys;
    T* dr = ds + r * keys;
    ExpRow(pr, first, last, keys, g.lse[t]);
    T d = 0;
    for (int64_t j = 0; j < a.hd; ++j) d += g.dout[t * ld + j] * g.out[t * ld + j];
    for (int64_t j = 0; j < keys; ++j) dr[j] = pr[j] * (dr[j] - d) * a.scale;
  }
  Gemm<T>(Trans::kNo, Trans::kNo, rows, a.hd, keys, T(1), ds, keys, a.k + tile.k0 * ld, ld, T(1),
          g.dq + tile.t0 * ld, ld);
  Gemm<T>(Trans::kYes, Trans::kNo, keys, a.hd, rows, T(1), ds, keys, a.q + tile.t0 * ld, ld, T(1),
          g.dk + tile.k0 * ld, ld);
  Gemm<T>(Trans::kYes, Trans::kNo, keys, a.hd, rows, T(1), p, keys, g.dout + tile.t0 * ld, ld,
          T(1), g.dv + tile.k0 * ld, ld);
}

}  // namespace

// Parallel over (batch, head): each task owns its slice of dq, dk and dv.
template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                        const T* out, const T* lse, const int32_t* lo, int64_t b, int64_t t,
                        int64_t nh, int64_t hd, T scale) {
  ParallelFor(b * nh, [&](int64_t bh) {
    int64_t bi = bh / nh, off = Row(bi, 0, bh % nh, t, nh, hd);
    SliceArgs<T> a{q + off, k + off, v + off, lo + bi * t, nh * hd, hd, scale};
    SliceGrads<T> g{dq + off, dk + off, dv + off, dout + off, out + off, lse + bh * t};
    std::unique_ptr<T[]> p(new T[kQueryTile * t]), ds(new T[kQueryTile * t]);
    ForEachTile(a.lo, t, [&](const Tile& tile) { BackwardTile(p.get(), ds.get(), a, g, tile); });
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
