// The fused classifier's kernels (what they compute: softcap_cross_entropy.h), written against a
// primitives policy P: the GPU's (DevicePrimitives, mma_primitives.cuh) or the CPU emulator's
// (tests/trainer/emulated/), which runs these same kernels thread by thread without a GPU.
//
// ClassifierRowKernel keeps a row's capped logits in registers: it reads each fp32 logit once
// and caps it once, where the two-pass kernel (softcap_cross_entropy.cu) reads the row twice and
// caps it twice, and it takes two exponentials per logit instead of three. One block of
// kThreads per row, kPer logits per thread, for rows of at most kThreads · kPer logits
// (RowKernelPer says which kPer a vocabulary takes; 0: none, the two-pass kernel runs).
#ifndef ABLATE_TRAINER_CUDA_CLASSIFIER_KERNELS_CUH_
#define ABLATE_TRAINER_CUDA_CLASSIFIER_KERNELS_CUH_

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "trainer/cpu/softcap_cross_entropy.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/policy_util.cuh"

namespace ablate::cuda::classifier_kernels {

using cpu::SoftcapKind;

constexpr int kThreads = 256;
constexpr int kSmemBytes = 32 * int(sizeof(float));  // the block reductions' scratch

struct DeviceCap {
  SoftcapKind kind;
  float c;
};

__host__ __device__ __forceinline__ float Cap(float z, DeviceCap s) {
  if (s.kind == SoftcapKind::kTanh) return s.c * tanhf(z / s.c);
  if (s.kind == SoftcapKind::kSigmoid) return s.c / (1.f + expf(-z / (s.c / 4.f)));
  return z;
}

// The cap's derivative as a function of its output y (CPU twin: CapGrad).
__host__ __device__ __forceinline__ float CapGrad(float y, DeviceCap s) {
  if (s.kind == SoftcapKind::kTanh) return 1.f - (y / s.c) * (y / s.c);
  if (s.kind == SoftcapKind::kSigmoid) return 4.f * (y / s.c) * (1.f - y / s.c);
  return 1.f;
}

// The per-thread counts the row kernel is built for, and the smallest that holds a row of v
// logits (0 when none does).
constexpr int kPerCounts[] = {4, 16, 64, 200};  // 200: rows of up to 51,200 (the records' 50,304)
constexpr int RowKernelPer(int64_t v) {
  for (int per : kPerCounts) {
    if (v <= int64_t(per) * kThreads) return per;
  }
  return 0;
}

struct ClassifierArgs {
  float* losses;           // (N)
  bf16* dlogits;           // (N, V) or null (evaluation)
  const float* logits;     // (N, V) raw
  const int32_t* targets;  // (N)
  int64_t v;
  DeviceCap cap;
  float dloss;
};

// Logit j = Thread() + i · kThreads of the row is y[i]: reads coalesce, and the padding past v
// (−inf) adds exp(−inf) = 0 to the sum.
template <class P, int kPer>
__global__ void __launch_bounds__(kThreads, 1) ClassifierRowKernel(ClassifierArgs a) {
  float* shared = reinterpret_cast<float*>(P::Smem());
  int64_t row = P::Block().x;
  int t = P::Thread();
  const float* z = a.logits + row * a.v;
  float y[kPer];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    int64_t j = t + int64_t(i) * kThreads;
    y[i] = j < a.v ? Cap(z[j], a.cap) : -INFINITY;
    m = fmaxf(m, y[i]);
  }
  m = policy::BlockMax<P, kThreads>(m, shared);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kPer; ++i) s += expf(y[i] - m);
  s = policy::BlockTotal<P, kThreads>(s, shared);
  float lse = m + logf(s);
  int64_t target = a.targets[row];
  if (t == 0) a.losses[row] = lse - Cap(z[target], a.cap);
  if (a.dlogits == nullptr) return;
  bf16* d = a.dlogits + row * a.v;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    int64_t j = t + int64_t(i) * kThreads;
    if (j < a.v) {
      float g = a.dloss * CapGrad(y[i], a.cap);
      float grad = g * expf(y[i] - lse);
      if (j == target) grad -= g;
      d[j] = __float2bfloat16(grad);
    }
  }
}

}  // namespace ablate::cuda::classifier_kernels

#endif  // ABLATE_TRAINER_CUDA_CLASSIFIER_KERNELS_CUH_
