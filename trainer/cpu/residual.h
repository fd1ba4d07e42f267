// Weighted sums of two streams with learnable scalar weights: out = a·x + b·y. Covers the
// residual adds, the embedding shortcut (λ0·x + λ1·x0), U-Net skips (x + w·skip), the value
// residual ((1−λ)·v + λ·v1) and value-embedding mixes (λ0·v + λ1·ve). With bf16 rounding they
// compute what PyTorch computes on bf16 tensors (MODEL.md "Activation dtype").
#ifndef ABLATE_TRAINER_CPU_RESIDUAL_H_
#define ABLATE_TRAINER_CPU_RESIDUAL_H_

#include <cstdint>

#include "trainer/cpu/output.h"

namespace ablate::cpu {

// out (N) = a·x + b·y; y may be null (then out = a·x). out may alias x or y.
// kBf16: out = bf16(bf16(bf16(a)·x) + bf16(bf16(b)·y)).
template <class T>
void residual_mix_forward(T* out, const T* x, T a, const T* y, T b, int64_t n,
                          Rounding rounding = Rounding::kNone);

// The weight the forward multiplies by: w, or bf16(w) under kBf16 (what the backward's dx and
// dy use, so that they are the forward's exact derivatives).
template <class T>
T mix_weight(T w, Rounding rounding);

// x (N) = bf16(x) in place: a tensor stored as bf16.
template <class T>
void round_to_bf16(T* x, int64_t n);

// Gradients of out = a·x + b·y: dx += a·dout, dy += b·dout, *da += Σ dout·x, *db += Σ dout·y.
// Any of dx, dy, da, db may be null (y must be non-null when dy or db is).
template <class T>
struct MixGrads {
  T* dx = nullptr;
  T* dy = nullptr;
  T* da = nullptr;
  T* db = nullptr;
};

template <class T>
void residual_mix_backward(const MixGrads<T>& g, const T* dout, const T* x, T a, const T* y, T b,
                           int64_t n);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_RESIDUAL_H_
