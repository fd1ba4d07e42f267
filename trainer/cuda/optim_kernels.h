// Launchers of the optimizer kernels (optim.cu), for adam.cc and muon.cc. Internal to
// trainer/cuda; kept free of C++20 so that nvcc compiles it in C++17 mode.
#ifndef ABLATE_TRAINER_CUDA_OPTIM_KERNELS_H_
#define ABLATE_TRAINER_CUDA_OPTIM_KERNELS_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

// The per-step constants of one Adam span (the CPU twin's AdamCoeffs).
struct AdamCoeffs {
  float b1, one_minus_b1, b2, one_minus_b2, step_size, inv_bc2, eps;
};

// p, g, m, v (n): m, v ← moments; p −= step_size · m / (sqrt(v)·inv_bc2 + eps).
Status adam_update(CudaContext& ctx, float* p, const float* g, float* m, float* v, int64_t n,
                   const AdamCoeffs& k);

// The same for a span stored in bf16: g read rounded to bf16, m and v in bf16, p rounded to
// bf16 after the update (bf16 values in its fp32 buffer).
Status adam_update_bf16(CudaContext& ctx, float* p, const float* g, bf16* m, bf16* v, int64_t n,
                        const AdamCoeffs& k);

// lerp false: buf (n) = μ·buf + g; out (n) = g + μ·buf with Nesterov, else buf.
// lerp true: buf = lerp(buf, g, 1 − μ); out = lerp(g, buf, μ) with Nesterov, else buf.
Status muon_momentum(CudaContext& ctx, float* buf, const float* g, float* out, int64_t n, double mu,
                     bool nesterov, bool lerp);

// inv_norm[j] = 1 / (‖staging[j]‖_F + 1e-7) for the `count` matrices of n elements in staging.
Status muon_inv_norm(CudaContext& ctx, float* inv_norm, const float* staging, int64_t count,
                     int64_t n);

// x (count, r, c) bf16 = staging (count, ·) · inv_norm, each matrix transposed when `transposed`
// (then stored (c, r) in staging).
Status muon_pack(CudaContext& ctx, bf16* x, const float* staging, const float* inv_norm,
                 int64_t count, int64_t r, int64_t c, bool transposed);

// p (rows, cols) −= k · X, X = x (rows, cols), or xᵀ of x (cols, rows) when `transposed`.
Status muon_apply(CudaContext& ctx, float* p, const bf16* x, int64_t rows, int64_t cols,
                  bool transposed, float k);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_OPTIM_KERNELS_H_
