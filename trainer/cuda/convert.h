// Layout and precision moves that have no CPU twin of their own: fp32 → bf16 copies (weights for
// the GEMMs, gradients that feed GEMMs) and the q/k/v split and merge of the fused QKV product
// (the CPU does the same with memcpy in gpt.cc / gpt_backward.cc).
#ifndef ABLATE_TRAINER_CUDA_CONVERT_H_
#define ABLATE_TRAINER_CUDA_CONVERT_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

// out (N) = bf16(in (N)), round to nearest even.
Status to_bf16(CudaContext& ctx, bf16* out, const float* in, int64_t n);

// qkv (N, 3C) → q, k, v (N, C) each.
Status split_qkv(CudaContext& ctx, bf16* q, bf16* k, bf16* v, const bf16* qkv, int64_t n,
                 int64_t c);

// dq, dk, dv (N, C) fp32 → dqkv (N, 3C) bf16.
Status merge_qkv(CudaContext& ctx, bf16* dqkv, const float* dq, const float* dk, const float* dv,
                 int64_t n, int64_t c);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_CONVERT_H_
