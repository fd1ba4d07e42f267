// The backward's passes over the stream's gradient (what they compute: rmsnorm.h, residual.h),
// written against a primitives policy P: the GPU's (DevicePrimitives, mma_primitives.cuh) or the
// CPU emulator's (tests/trainer/emulated/), which runs these same kernels thread by thread
// without a GPU. They use P::Thread(), P::Block(), P::Smem(), P::Sync() and P::ShflXor().
//
// Each pass that writes a stream gradient dx can also write its bf16 copy (dx_bf16; null: not
// wanted), the operand of the bf16 GEMM that reads dx next, so that no separate fp32 → bf16 pass
// reads dx again (gpt_backward.cc says which writer writes it). The copy is bf16(dx) of the value
// stored, round to nearest even: the bits to_bf16 (convert.h) would give.
#ifndef ABLATE_TRAINER_CUDA_STREAM_KERNELS_CUH_
#define ABLATE_TRAINER_CUDA_STREAM_KERNELS_CUH_

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "trainer/cpu/output.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/mix_weight.h"
#include "trainer/cuda/policy_util.cuh"

namespace ablate::cuda::stream_kernels {

using policy::Load;

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;  // RMSNorm: one warp per row
// The mix backward's fixed grid: the partials of block k always cover the same elements, so the
// weights' gradients are the same bits on every run and every GPU. 1,024 blocks of 256 threads
// fill an H100 or H200 (132 SMs × 2,048 threads; NOTES.md item 10).
constexpr int kMixBlocks = 1024;
constexpr int kSumSmemBytes = 32 * int(sizeof(float));  // BlockTotal's scratch

constexpr unsigned RowBlocks(int64_t rows) {
  return unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

// ---- RMSNorm backward: dx (+)= r·dy − r³·x·(dy·x)/C -------------------------------------------

template <class TIn>
struct NormBackwardArgs {
  float* dinp;        // (N, C)
  bf16* dinp_bf16;    // (N, C) or null
  const float* dout;  // (N, C); may alias dinp when !add
  const TIn* inp;     // (N, C), the forward's input
  const float* rstd;  // (N)
  int64_t n, c;
  bool add;  // dinp += (else =)
};

template <class P, class TIn>
__global__ void __launch_bounds__(kThreads) RmsNormBackwardKernel(NormBackwardArgs<TIn> a) {
  int64_t row = int64_t(P::Block().x) * kRowsPerBlock + P::Thread() / 32;
  int lane = P::Thread() % 32;
  if (row >= a.n) return;  // whole warps leave together
  const TIn* x = a.inp + row * a.c;
  const float* dy = a.dout + row * a.c;
  float dot = 0.f;
  for (int64_t j = lane; j < a.c; j += 32) dot = fmaf(dy[j], Load(x[j]), dot);
  dot = policy::WarpTotal<P>(dot);
  float r = a.rstd[row];
  float k = r * r * r * dot / float(a.c);
  float* dx = a.dinp + row * a.c;
  bf16* dxb = a.dinp_bf16 != nullptr ? a.dinp_bf16 + row * a.c : nullptr;
  for (int64_t j = lane; j < a.c; j += 32) {
    float g = fmaf(r, dy[j], -k * Load(x[j]));
    float v = a.add ? dx[j] + g : g;
    dx[j] = v;
    if (dxb != nullptr) dxb[j] = __float2bfloat16(v);
  }
}

// ---- dst (+)= src, elementwise ----------------------------------------------------------------

struct AddArgs {
  float* dst;        // (N)
  bf16* dst_bf16;    // (N) or null
  const float* src;  // (N)
  int64_t n;
  int64_t stride;  // the grid's threads
};

template <class P>
__global__ void __launch_bounds__(kThreads) AddKernel(AddArgs a) {
  for (int64_t i = int64_t(P::Block().x) * kThreads + P::Thread(); i < a.n; i += a.stride) {
    float v = a.dst[i] + a.src[i];
    a.dst[i] = v;
    if (a.dst_bf16 != nullptr) a.dst_bf16[i] = __float2bfloat16(v);
  }
}

// ---- The backward of out = a·x + b·y ------------------------------------------------------------

template <class TX, class TY>
struct MixBackwardArgs {
  MixGrads g;
  const float* dout;  // (N)
  const TX* x;        // (N)
  MixWeight a;
  const TY* y;  // (N) or null
  MixWeight b;
  int64_t n;
  float* partial;  // 2 · kMixBlocks: Σ dout·x, then Σ dout·y, per block
};

// Grid kMixBlocks × kThreads, kSumSmemBytes of dynamic shared memory.
template <class P, class TX, class TY>
__global__ void __launch_bounds__(kThreads) MixBackwardKernel(MixBackwardArgs<TX, TY> a) {
  float* shared = reinterpret_cast<float*>(P::Smem());
  const MixGrads& g = a.g;
  float av = policy::WeightOf(a.a), bv = a.y != nullptr ? policy::WeightOf(a.b) : 0.f;
  float sx = 0.f, sy = 0.f;
  bool dx_add = g.dx_mode == cpu::Output::kAdd, dy_add = g.dy_mode == cpu::Output::kAdd;
  const int64_t stride = int64_t(kMixBlocks) * kThreads;
  for (int64_t i = int64_t(P::Block().x) * kThreads + P::Thread(); i < a.n; i += stride) {
    float d = a.dout[i];
    sx += d * Load(a.x[i]);
    if (a.y != nullptr) sy += d * Load(a.y[i]);
    if (g.dx != nullptr) {
      float v = (dx_add ? g.dx[i] : 0.f) + av * d;
      g.dx[i] = v;
      if (g.dx_bf16 != nullptr) g.dx_bf16[i] = __float2bfloat16(v);
    }
    if (g.dy != nullptr) g.dy[i] = (dy_add ? g.dy[i] : 0.f) + bv * d;
  }
  sx = policy::BlockTotal<P, kThreads>(sx, shared);
  sy = policy::BlockTotal<P, kThreads>(sy, shared);
  if (P::Thread() == 0) {
    a.partial[P::Block().x] = sx;
    a.partial[kMixBlocks + P::Block().x] = sy;
  }
}

// One block of kMixBlocks threads (kSumSmemBytes of dynamic shared memory): thread k adds
// partial k, then thread 0 updates the targets (da first, then db, so da and db may name the
// same parameter).
template <class P>
__global__ void __launch_bounds__(kMixBlocks)
    MixFinalizeKernel(const float* partial, GradTarget da, GradTarget db) {
  float* shared = reinterpret_cast<float*>(P::Smem());
  float sx = policy::BlockTotal<P, kMixBlocks>(partial[P::Thread()], shared);
  float sy = policy::BlockTotal<P, kMixBlocks>(partial[kMixBlocks + P::Thread()], shared);
  if (P::Thread() == 0) {
    if (da.ptr != nullptr) *da.ptr += da.scale * sx;
    if (db.ptr != nullptr) *db.ptr += db.scale * sy;
  }
}

}  // namespace ablate::cuda::stream_kernels

#endif  // ABLATE_TRAINER_CUDA_STREAM_KERNELS_CUH_
