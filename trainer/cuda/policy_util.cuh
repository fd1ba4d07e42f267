// What the kernels written against a primitives policy P share (qkv_kernels.cuh,
// embedding_kernels.cuh, stream_kernels.cuh, attention_mma_kernels.cuh): bf16 rounding, a mix
// weight's value, and warp and block sums over P::ShflXor with one fixed tree, the same as
// kernel_util.cuh's WarpSum and BlockSum (so a kernel moved onto the policy keeps its bits).
// Host compilers (the emulator's build) get a stand-in for nvcc's launch bounds.
#ifndef ABLATE_TRAINER_CUDA_POLICY_UTIL_CUH_
#define ABLATE_TRAINER_CUDA_POLICY_UTIL_CUH_

#include <cuda_bf16.h>

#include "trainer/cuda/dtype.h"
#include "trainer/cuda/mix_weight.h"

#ifndef __CUDACC__
#define __launch_bounds__(...)
#endif

namespace ablate::cuda::policy {

__host__ __device__ __forceinline__ float Bf16Round(float v) {
  return __bfloat162float(__float2bfloat16(v));  // round to nearest even
}

__host__ __device__ __forceinline__ float Load(float v) { return v; }
__host__ __device__ __forceinline__ float Load(bf16 v) { return __bfloat162float(v); }

__host__ __device__ __forceinline__ float WeightOf(const MixWeight& w) {
  float v = w.ptr != nullptr ? w.offset + w.scale * *w.ptr : w.offset;
  return w.bf16 ? Bf16Round(v) : v;
}

// The sum over the warp; every lane gets it.
template <class P>
__device__ __forceinline__ float WarpTotal(float v) {
  for (int o = 16; o > 0; o >>= 1) v += P::ShflXor(v, o);
  return v;
}

// The sum over a block of kBlockThreads (a multiple of 32, at most 1,024) threads, every one of
// which calls it; every thread gets it. `shared` holds 32 floats of the block's shared memory.
template <class P, int kBlockThreads>
__device__ __forceinline__ float BlockTotal(float v, float* shared) {
  static_assert(kBlockThreads % 32 == 0 && kBlockThreads <= 1024);
  int lane = P::Thread() % 32, warp = P::Thread() / 32;
  v = WarpTotal<P>(v);
  P::Sync();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  P::Sync();
  v = lane < kBlockThreads / 32 ? shared[lane] : 0.f;
  return WarpTotal<P>(v);
}

}  // namespace ablate::cuda::policy

#endif  // ABLATE_TRAINER_CUDA_POLICY_UTIL_CUH_
