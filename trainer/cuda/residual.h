// Weighted sums of two streams, out = a·x + b·y, with the weights read from device memory (they
// are trained parameters: λs, skip weights), and their backward with deterministic reductions
// for the weights' gradients. CPU twin: trainer/cpu/residual.h.
#ifndef ABLATE_TRAINER_CUDA_RESIDUAL_H_
#define ABLATE_TRAINER_CUDA_RESIDUAL_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cpu/output.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/mix_weight.h"

namespace ablate::cuda {

using cpu::Output;

// out (N) = a·x + b·y; y may be null (then out = a·x). out may alias x or y. kBf16 (with
// weights marked bf16 by the caller): out = bf16(bf16(a·x) + bf16(b·y)), held in TOut.
// (TOut, TX, TY) in {(float, float, float), (float, float, bf16), (bf16, bf16, bf16),
// (bf16, bf16, float)}.
template <class TOut, class TX, class TY>
Status residual_mix_forward(CudaContext& ctx, TOut* out, const TX* x, MixWeight a, const TY* y,
                            MixWeight b, int64_t n, Rounding rounding = Rounding::kNone);

// The gradients of out = a·x + b·y given dout (N). The weight gradients are summed in a fixed
// order (one partial per block of a fixed grid, then one block), using ctx.reduce_scratch().
// (TX, TY) in {(float, float), (bf16, bf16), (bf16, float)}.
template <class TX, class TY>
Status residual_mix_backward(CudaContext& ctx, const MixGrads& g, const float* dout, const TX* x,
                             MixWeight a, const TY* y, MixWeight b, int64_t n);

// dst (N) += src (N); dst_bf16 (N) = bf16(dst) as stored, when non-null. dst may not alias
// src.
Status add_into(CudaContext& ctx, float* dst, const float* src, int64_t n,
                bf16* dst_bf16 = nullptr);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_RESIDUAL_H_
