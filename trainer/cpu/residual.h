// Weighted sums of two streams with learnable scalar weights: out = a·x + b·y. Covers the
// residual adds, the embedding shortcut (λ0·x + λ1·x0), U-Net skips (x + w·skip), the value
// residual ((1−λ)·v + λ·v1) and value-embedding mixes (λ0·v + λ1·ve).
#ifndef ABLATE_TRAINER_CPU_RESIDUAL_H_
#define ABLATE_TRAINER_CPU_RESIDUAL_H_

#include <cstdint>

namespace ablate::cpu {

// out (N) = a·x + b·y; y may be null (then out = a·x). out may alias x or y.
template <class T>
void residual_mix_forward(T* out, const T* x, T a, const T* y, T b, int64_t n);

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
