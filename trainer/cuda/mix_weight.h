// A stream mix's weight as the device reads it, and where its backward's gradients go
// (residual.h, qkv.h). Plain data, so that kernels written against a primitives policy
// (qkv_kernels.cuh, stream_kernels.cuh) take them on the CPU emulator too.
#ifndef ABLATE_TRAINER_CUDA_MIX_WEIGHT_H_
#define ABLATE_TRAINER_CUDA_MIX_WEIGHT_H_

#include "trainer/cpu/output.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

using cpu::Output;
using cpu::Rounding;

// A mixing weight: offset + scale · *ptr, read on the device (ptr null: the constant offset),
// rounded to bf16 when `bf16` (a 0-dim fp32 tensor times a bf16 stream tensor; the backward uses
// the same rounded value).
struct MixWeight {
  const float* ptr = nullptr;
  float scale = 1.f;
  float offset = 0.f;
  bool bf16 = false;

  MixWeight RoundedIf(Rounding r) const {
    MixWeight w = *this;
    w.bf16 = r == Rounding::kBf16;
    return w;
  }

  static MixWeight Constant(float v) { return {nullptr, 0.f, v}; }
  static MixWeight Param(const float* p) { return {p, 1.f, 0.f}; }
  static MixWeight OneMinus(const float* p) { return {p, -1.f, 1.f}; }  // 1 − *p
};

// Where a weight's gradient goes: *ptr += scale · Σ dout·operand (ptr null: not wanted).
struct GradTarget {
  float* ptr = nullptr;
  float scale = 1.f;
};

// Gradients of out = a·x + b·y: dx (+)= a·dout, dy (+)= b·dout, da and db as GradTargets.
// Any pointer may be null (y must be non-null when dy or db is). dx_bf16, when set with dx,
// receives bf16(dx) as stored (the next bf16 GEMM's operand).
struct MixGrads {
  float* dx = nullptr;
  Output dx_mode = Output::kAdd;
  float* dy = nullptr;
  Output dy_mode = Output::kAdd;
  GradTarget da, db;
  bf16* dx_bf16 = nullptr;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_MIX_WEIGHT_H_
