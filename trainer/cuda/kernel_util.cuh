// Device helpers shared by the .cu files: element conversion, grid sizing and deterministic
// warp/block reductions (a fixed tree over a fixed assignment of elements to threads, so a
// result never depends on scheduling). Internal to trainer/cuda; CUDA sources only.
#ifndef ABLATE_TRAINER_CUDA_KERNEL_UTIL_CUH_
#define ABLATE_TRAINER_CUDA_KERNEL_UTIL_CUH_

#include <cuda_bf16.h>

#include <cstdint>
#include <string>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda::kernel {

__device__ __forceinline__ float ToFloat(float x) { return x; }
__device__ __forceinline__ float ToFloat(bf16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T FromFloat(float x);
template <>
__device__ __forceinline__ float FromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 FromFloat<bf16>(float x) {
  return __float2bfloat16(x);  // round to nearest even
}

// Grants `kernel` `bytes` of dynamic shared memory (above the 48 KB default); an Error naming
// `what` when the device allows less per block.
template <class Kernel>
Status AllowDynamicSmem(CudaContext& ctx, Kernel kernel, int bytes, const char* what) {
  if (bytes > ctx.device().max_shared_per_block) {
    return Error{std::string(what) + " needs " + std::to_string(bytes) +
                     " bytes of shared memory per block; " + ctx.device().name + " allows " +
                     std::to_string(ctx.device().max_shared_per_block),
                 ""};
  }
  ABLATE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return {};
}

// Blocks for a grid-stride loop over n elements: enough to fill any GPU, never more than needed.
inline unsigned int GridFor(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  const int64_t kMaxBlocks = int64_t(1) << 16;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return blocks < 1 ? 1u : unsigned(blocks);
}

// Grid-stride loop index helpers.
__device__ __forceinline__ int64_t GlobalThread() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() { return int64_t(gridDim.x) * blockDim.x; }

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ double WarpSum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block; every thread gets the result. REQUIRES: blockDim.x a multiple of 32 and at
// most 1024, every thread of the block calls it. `shared` holds 32 floats.
__device__ __forceinline__ float BlockSum(float v, float* shared) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpSum(v);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.f;
  return WarpSum(v);
}

// As BlockSum, in double (the reported losses' sums). `shared` holds 32 doubles.
__device__ __forceinline__ double BlockSum(double v, double* shared) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpSum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.0;
  return WarpSum(v);
}

// Merges running softmax statistics (max m, Σ exp(· − m)) of two parts. A part with m = −inf is
// empty (sum 0) and never produces inf − inf.
__device__ __forceinline__ void MergeMaxSum(float* m, float* s, float m2, float s2) {
  if (m2 == -INFINITY) return;
  if (*m == -INFINITY) {
    *m = m2;
    *s = s2;
    return;
  }
  float mx = fmaxf(*m, m2);
  *s = *s * expf(*m - mx) + s2 * expf(m2 - mx);
  *m = mx;
}

}  // namespace ablate::cuda::kernel

#endif  // ABLATE_TRAINER_CUDA_KERNEL_UTIL_CUH_
