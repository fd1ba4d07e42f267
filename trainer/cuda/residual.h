// Weighted sums of two streams, out = a·x + b·y, with the weights read from device memory (they
// are trained parameters: λs, skip weights), and their backward with deterministic reductions
// for the weights' gradients. CPU twin: trainer/cpu/residual.h.
#ifndef ABLATE_TRAINER_CUDA_RESIDUAL_H_
#define ABLATE_TRAINER_CUDA_RESIDUAL_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cpu/output.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/mix_weight.h"

namespace ablate::cuda {

using cpu::Output;

// Where a weight's gradient goes: *ptr += scale · Σ dout·operand (ptr null: not wanted).
struct GradTarget {
  float* ptr = nullptr;
  float scale = 1.f;
};

// Gradients of out = a·x + b·y: dx (+)= a·dout, dy (+)= b·dout, da and db as GradTargets.
// Any pointer may be null (y must be non-null when dy or db is).
struct MixGrads {
  float* dx = nullptr;
  Output dx_mode = Output::kAdd;
  float* dy = nullptr;
  Output dy_mode = Output::kAdd;
  GradTarget da, db;
};

// out (N) = a·x + b·y; y may be null (then out = a·x). out may alias x or y. kBf16 (with
// weights marked bf16 by the caller): out = bf16(bf16(a·x) + bf16(b·y)), held in TOut.
// (TOut, TX, TY) in {(float, float, float), (float, float, bf16), (bf16, bf16, bf16),
// (bf16, bf16, float)}.
template <class TOut, class TX, class TY>
Status residual_mix_forward(CudaContext& ctx, TOut* out, const TX* x, MixWeight a, const TY* y,
                            MixWeight b, int64_t n, Rounding rounding = Rounding::kNone);

// x (N) = bf16(x) in place: an fp32 buffer holding a bf16 tensor's values.
Status round_to_bf16(CudaContext& ctx, float* x, int64_t n);

// The gradients of out = a·x + b·y given dout (N). The weight gradients are summed in a fixed
// order (one partial per block of a fixed grid, then one block), using ctx.reduce_scratch().
// (TX, TY) in {(float, float), (bf16, bf16), (bf16, float)}.
template <class TX, class TY>
Status residual_mix_backward(CudaContext& ctx, const MixGrads& g, const float* dout, const TX* x,
                             MixWeight a, const TY* y, MixWeight b, int64_t n);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_RESIDUAL_H_
