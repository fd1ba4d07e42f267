// Softcap + cross-entropy, one row per task. The backward needs only the capped logits: the cap's
// derivative is a function of its output (1 − (y/c)² for tanh, 4σ(1 − σ) with σ = y/c).
#include "trainer/cpu/softcap_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/cpu/fast_exp.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/parallel.h"

namespace ablate::cpu {
namespace {

template <class T>
T Cap(T z, Softcap s) {
  T c = T(s.cap);
  // tanh(u) = 1 − 2/(e^{2u} + 1); FastExp keeps the float loop vectorisable.
  if (s.kind == SoftcapKind::kTanh) return c * (T(1) - T(2) / (FastExp(T(2) * z / c) + T(1)));
  if (s.kind == SoftcapKind::kSigmoid) return c / (T(1) + FastExp(-z / (c / T(4))));
  return z;
}

template <class T>
T CapGrad(T y, Softcap s) {
  T c = T(s.cap);
  if (s.kind == SoftcapKind::kTanh) return T(1) - (y / c) * (y / c);
  if (s.kind == SoftcapKind::kSigmoid) return T(4) * (y / c) * (T(1) - y / c);
  return T(1);
}

template <class T>
T RowLogSumExp(const T* row, int64_t v) {
  T mx = RowMax(row, v);
  return mx + std::log(SumExpShifted(row, v, mx));
}

}  // namespace

template <class T>
void softcap_cross_entropy_forward(T* losses, T* lse, T* logits, const int32_t* targets,
                                   int64_t n, int64_t v, Softcap cap) {
  ParallelFor(n, [&](int64_t i) {
    T* row = logits + i * v;
    if (cap.kind != SoftcapKind::kNone) {
      for (int64_t j = 0; j < v; ++j) row[j] = Cap(row[j], cap);
    }
    lse[i] = RowLogSumExp(row, v);
    losses[i] = lse[i] - row[targets[i]];
  });
}

template <class T>
void softcap_cross_entropy_backward(T* dlogits, const T* capped, const T* row_lse,
                                    const int32_t* targets, int64_t n, int64_t v, Softcap cap,
                                    T dloss) {
  ParallelFor(n, [&](int64_t i) {
    const T* row = capped + i * v;
    T* d = dlogits + i * v;
    T lse = row_lse[i];
    if (cap.kind == SoftcapKind::kNone) {
      for (int64_t j = 0; j < v; ++j) d[j] = dloss * FastExp(row[j] - lse);
    } else {
      for (int64_t j = 0; j < v; ++j) d[j] = dloss * FastExp(row[j] - lse) * CapGrad(row[j], cap);
    }
    d[targets[i]] -= dloss * CapGrad(row[targets[i]], cap);
  });
}


namespace {

// The vocabulary is cut into a fixed number of chunks (one parallel task each, so results do not
// depend on the thread count), each walked in blocks of about 256K logits (1 MB of floats).
constexpr int64_t kMaxChunks = 16;
constexpr int64_t kBlockElems = int64_t(1) << 18;

struct HeadBlocks {
  int64_t chunks, chunk, block;  // chunk count, columns per chunk, columns per block
};

HeadBlocks MakeHeadBlocks(int64_t n, int64_t v) {
  int64_t chunks = std::clamp<int64_t>(v / 4096, 1, kMaxChunks);
  int64_t chunk = (v + chunks - 1) / chunks;
  int64_t block = std::clamp<int64_t>(kBlockElems / std::max<int64_t>(n, 1), 64, 1024);
  return {chunks, chunk, block};
}

// Calls fn(b0, b1) for the column blocks of chunk ch.
template <class Fn>
void ForEachBlock(const HeadBlocks& h, int64_t ch, int64_t v, const Fn& fn) {
  int64_t end = std::min(v, (ch + 1) * h.chunk);
  for (int64_t b0 = ch * h.chunk; b0 < end; b0 += h.block) fn(b0, std::min(end, b0 + h.block));
}

// Running (max, Σ exp(· − max)) of a row, merged block by block.
template <class T>
void MergeRowStats(T* mx, T* sum, T block_max, T block_sum) {
  if (block_max > *mx) {
    *sum = *sum * FastExp(*mx - block_max) + block_sum;
    *mx = block_max;
  } else {
    *sum += block_sum * FastExp(block_max - *mx);
  }
}

}  // namespace

template <class T>
void lm_head_forward(T* logits, T* losses, T* lse, const T* x, const T* w, const int32_t* targets,
                     int64_t n, int64_t c, int64_t v, Softcap cap) {
  HeadBlocks h = MakeHeadBlocks(n, v);
  std::vector<T> mx(h.chunks * n, -INFINITY), sum(h.chunks * n, T(0));
  ParallelForDynamic(h.chunks, [&](int64_t ch) {
    ForEachBlock(h, ch, v, [&](int64_t b0, int64_t b1) {
      Gemm<T>(Trans::kNo, Trans::kYes, n, b1 - b0, c, T(1), x, c, w + b0 * c, c, T(0),
              logits + b0, v);
      for (int64_t i = 0; i < n; ++i) {
        T* row = logits + i * v + b0;
        if (cap.kind != SoftcapKind::kNone) {
          for (int64_t j = 0; j < b1 - b0; ++j) row[j] = Cap(row[j], cap);
        }
        T m = RowMax(row, b1 - b0);
        MergeRowStats(&mx[ch * n + i], &sum[ch * n + i], m, SumExpShifted(row, b1 - b0, m));
      }
    });
  });
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 1; ch < h.chunks; ++ch) {
      MergeRowStats(&mx[i], &sum[i], mx[ch * n + i], sum[ch * n + i]);
    }
    lse[i] = mx[i] + std::log(sum[i]);
    losses[i] = lse[i] - logits[i * v + targets[i]];
  }
}

template <class T>
void lm_head_backward(T* dx, T* dw, const T* logits, const T* lse, const T* x, const T* w,
                      const int32_t* targets, int64_t n, int64_t c, int64_t v, Softcap cap,
                      T dloss) {
  HeadBlocks h = MakeHeadBlocks(n, v);
  std::vector<T> dx_part(h.chunks * n * c, T(0));
  ParallelForDynamic(h.chunks, [&](int64_t ch) {
    std::vector<T> d(n * h.block);
    ForEachBlock(h, ch, v, [&](int64_t b0, int64_t b1) {
      int64_t width = b1 - b0;
      for (int64_t i = 0; i < n; ++i) {
        const T* row = logits + i * v + b0;
        T* dr = d.data() + i * width;
        for (int64_t j = 0; j < width; ++j) {
          dr[j] = dloss * FastExp(row[j] - lse[i]) * CapGrad(row[j], cap);
        }
        int64_t tj = targets[i] - b0;
        if (tj >= 0 && tj < width) dr[tj] -= dloss * CapGrad(row[tj], cap);
      }
      Gemm<T>(Trans::kNo, Trans::kNo, n, c, width, T(1), d.data(), width, w + b0 * c, c, T(1),
              dx_part.data() + ch * n * c, c);
      Gemm<T>(Trans::kYes, Trans::kNo, width, c, n, T(1), d.data(), width, x, c, T(1), dw + b0 * c,
              c);
    });
  });
  for (int64_t ch = 0; ch < h.chunks; ++ch) {
    const T* part = dx_part.data() + ch * n * c;
    for (int64_t i = 0; i < n * c; ++i) dx[i] += part[i];
  }
}

template void lm_head_forward<float>(float*, float*, float*, const float*, const float*,
                                     const int32_t*, int64_t, int64_t, int64_t, Softcap);
template void lm_head_forward<double>(double*, double*, double*, const double*, const double*,
                                      const int32_t*, int64_t, int64_t, int64_t, Softcap);
template void lm_head_backward<float>(float*, float*, const float*, const float*, const float*,
                                      const float*, const int32_t*, int64_t, int64_t, int64_t,
                                      Softcap, float);
template void lm_head_backward<double>(double*, double*, const double*, const double*,
                                       const double*, const double*, const int32_t*, int64_t,
                                       int64_t, int64_t, Softcap, double);
template void softcap_cross_entropy_forward<float>(float*, float*, float*,
                                                   const int32_t*, int64_t, int64_t, Softcap);
template void softcap_cross_entropy_forward<double>(double*, double*, double*,
                                                   const int32_t*, int64_t, int64_t, Softcap);
template void softcap_cross_entropy_backward<float>(float*, const float*, const float*,
                                                    const int32_t*, int64_t, int64_t, Softcap,
                                                    float);
template void softcap_cross_entropy_backward<double>(double*, const double*, const double*,
                                                    const int32_t*, int64_t, int64_t, Softcap,
                                                    double);

}  // namespace ablate::cpu
