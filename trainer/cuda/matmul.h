// Dense products through cuBLASLt: bf16 operands, fp32 accumulation, fp32 or bf16 results.
// Same conventions as the CPU twin (trainer/cpu/matmul.h): row-major, weights (out, in),
// y = x Wᵀ. Output::kAdd (beta = 1) is how residual adds and gradient accumulation are fused
// into the product instead of running as separate passes.
#ifndef ABLATE_TRAINER_CUDA_MATMUL_H_
#define ABLATE_TRAINER_CUDA_MATMUL_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/output.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

using cpu::Output;
using cpu::Trans;

// A strided batch of equally shaped products; strides in elements (0 = shared operand).
struct GemmBatch {
  int count = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// Row-major D (m, n) = alpha · op(A) (m, k) · op(B) (k, n) + beta · C, for each batch entry.
// C and D share ldc and stride_c; c may equal d (in place) and is not read when beta = 0.
// TOut is float or bf16. Errors: a cuBLASLt failure, or no algorithm for the shape.
template <class TOut>
Status Gemm(CudaContext& ctx, Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha,
            const bf16* a, int64_t lda, const bf16* b, int64_t ldb, float beta, const TOut* c,
            TOut* d, int64_t ldc, const GemmBatch& batch = {});

// out (N, OC) = inp (N, C) · weightᵀ, weight (OC, C); with Output::kAdd, out += instead.
template <class TOut>
Status matmul_forward(CudaContext& ctx, TOut* out, const bf16* inp, const bf16* weight, int64_t n,
                      int64_t c, int64_t oc, Output mode = Output::kOverwrite);

// out (N, OC) = base (N, OC) + inp (N, C) · weightᵀ in one GEMM (cuBLASLt reads C = base and
// writes D = out): a residual add without first copying base into out. out may equal base.
Status matmul_forward_add(CudaContext& ctx, float* out, const float* base, const bf16* inp,
                          const bf16* weight, int64_t n, int64_t c, int64_t oc);

// dinp (N, C) += dout (N, OC) · weight (dinp = with dinp_mode kOverwrite); dweight (OC, C) +=
// doutᵀ · inp, in fp32. Either output may be null. TDin is float or bf16.
template <class TDin>
Status matmul_backward(CudaContext& ctx, TDin* dinp, float* dweight, const bf16* dout,
                       const bf16* inp, const bf16* weight, int64_t n, int64_t c, int64_t oc,
                       Output dinp_mode = Output::kAdd);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_MATMUL_H_
