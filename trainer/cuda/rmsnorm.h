// Weightless RMSNorm over the last dim, y = x / sqrt(mean(x²) + eps), in fp32 arithmetic
// whatever the storage type. CPU twin: trainer/cpu/rmsnorm.h (same eps).
#ifndef ABLATE_TRAINER_CUDA_RMSNORM_H_
#define ABLATE_TRAINER_CUDA_RMSNORM_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cpu/output.h"
#include "trainer/cpu/rmsnorm.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

using cpu::Output;

// out (N, C) = normalised inp (N, C); rstd (N) = 1 / sqrt(mean(x²) + eps). out may alias inp.
// (TIn, TOut) in {(float, float), (float, bf16), (bf16, bf16)}.
template <class TIn, class TOut>
Status rmsnorm_forward(CudaContext& ctx, TOut* out, float* rstd, const TIn* inp, int64_t n,
                       int64_t c);

// dinp (N, C) += gradient through the norm given dout (N, C), the forward's inp and rstd; with
// Output::kOverwrite, dinp = instead (dinp may then alias dout). dinp_bf16 (N, C), when non-null,
// receives bf16(dinp) as stored (the next bf16 GEMM's operand). TIn is float or bf16. Kernel:
// stream_kernels.cuh.
template <class TIn>
Status rmsnorm_backward(CudaContext& ctx, float* dinp, const float* dout, const TIn* inp,
                        const float* rstd, int64_t n, int64_t c, Output mode = Output::kAdd,
                        bf16* dinp_bf16 = nullptr);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_RMSNORM_H_
