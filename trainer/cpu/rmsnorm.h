// Weightless RMSNorm over the last dim: y = x / sqrt(mean(x²) + eps), eps = float32 epsilon
// (the default of torch's F.rms_norm in the records). Used after the embedding, before attention
// and MLP, on the final stream and (per head) for QK-norm.
#ifndef ABLATE_TRAINER_CPU_RMSNORM_H_
#define ABLATE_TRAINER_CPU_RMSNORM_H_

#include <cstdint>

#include "trainer/cpu/output.h"

namespace ablate::cpu {

inline constexpr double kRmsNormEps = 1.1920928955078125e-07;

// out (N, C) = normalised inp (N, C); rstd (N) = 1 / sqrt(mean(x²) + eps). out may alias inp.
template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, int64_t n, int64_t c);

// dinp (N, C) += gradient through the norm, given dout (N, C), the forward's inp and rstd; with
// Output::kOverwrite, dinp = instead.
template <class T>
void rmsnorm_backward(T* dinp, const T* dout, const T* inp, const T* rstd, int64_t n, int64_t c,
                      Output mode = Output::kAdd);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_RMSNORM_H_
