// What the kernels written against a primitives policy P share (qkv_kernels.cuh,
// embedding_kernels.cuh, stream_kernels.cuh, classifier_kernels.cuh, attention_mma_kernels.cuh):
// bf16 rounding, a mix weight's value, and warp and block sums and maxima over P::ShflXor with one
// fixed tree, the sums the same as kernel_util.cuh's WarpSum and BlockSum (so a kernel moved onto
// the policy keeps its bits).
// Host compilers (the emulator's build) get a stand-in for nvcc's launch bounds.
#ifndef ABLATE_TRAINER_CUDA_POLICY_UTIL_CUH_
#define ABLATE_TRAINER_CUDA_POLICY_UTIL_CUH_

#include <cuda_bf16.h>

#include <cmath>

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

struct Plus {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __host__ __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// op over the warp, one xor tree; every lane gets it.
template <class P, class Op>
__device__ __forceinline__ float WarpReduce(float v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, P::ShflXor(v, o));
  return v;
}

// op over a block of kBlockThreads (a multiple of 32, at most 1,024) threads, every one of which
// calls it; every thread gets it. `shared` holds 32 floats of the block's shared memory;
// `identity` fills the lanes past the block's warps.
template <class P, int kBlockThreads, class Op>
__device__ __forceinline__ float BlockReduce(float v, float* shared, Op op, float identity) {
  static_assert(kBlockThreads % 32 == 0 && kBlockThreads <= 1024);
  int lane = P::Thread() % 32, warp = P::Thread() / 32;
  v = WarpReduce<P>(v, op);
  P::Sync();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  P::Sync();
  v = lane < kBlockThreads / 32 ? shared[lane] : identity;
  return WarpReduce<P>(v, op);
}

// The sum over the warp; every lane gets it.
template <class P>
__device__ __forceinline__ float WarpTotal(float v) {
  return WarpReduce<P>(v, Plus{});
}

// The sum over a block (BlockReduce).
template <class P, int kBlockThreads>
__device__ __forceinline__ float BlockTotal(float v, float* shared) {
  return BlockReduce<P, kBlockThreads>(v, shared, Plus{}, 0.f);
}

// The maximum over a block (BlockReduce).
template <class P, int kBlockThreads>
__device__ __forceinline__ float BlockMax(float v, float* shared) {
  return BlockReduce<P, kBlockThreads>(v, shared, Max{}, -INFINITY);
}

}  // namespace ablate::cuda::policy

#endif  // ABLATE_TRAINER_CUDA_POLICY_UTIL_CUH_
