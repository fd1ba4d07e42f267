// Kernels of the device Adam and Muon (their host sides: adam.cc, muon.cc).
#include <cmath>

#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/kernel_util.cuh"
#include "trainer/cuda/optim_kernels.h"

namespace ablate::cuda {
namespace {

using kernel::BlockSum;
using kernel::FromFloat;
using kernel::GlobalThread;
using kernel::GridFor;
using kernel::GridStride;
using kernel::ToFloat;

constexpr int kThreads = 256;

// ---- Adam ----------------------------------------------------------------------------------

// State is float or bf16. A bf16 span (stored in bf16, AdamSpan::bf16) reads its gradient
// rounded to bf16, keeps m and v in bf16 and rounds the parameter to bf16 after the update (its
// master copy holds bf16 values in an fp32 buffer); the arithmetic is fp32 either way (the CPU
// twin: AdamUpdate and AdamUpdateBf16).
template <class State>
__global__ void AdamKernel(float* p, const float* g, State* m, State* v, int64_t n,
                           AdamCoeffs k) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float gi = ToFloat(FromFloat<State>(g[i]));
    float mi = ToFloat(FromFloat<State>(k.b1 * ToFloat(m[i]) + k.one_minus_b1 * gi));
    float vi = ToFloat(FromFloat<State>(k.b2 * ToFloat(v[i]) + k.one_minus_b2 * gi * gi));
    m[i] = FromFloat<State>(mi);
    v[i] = FromFloat<State>(vi);
    p[i] = ToFloat(FromFloat<State>(p[i] - k.step_size * mi / (sqrtf(vi) * k.inv_bc2 + k.eps)));
  }
}

// ---- Muon ----------------------------------------------------------------------------------

// torch.lerp's arithmetic (the CPU twin: TorchLerp in optim/muon.h).
__device__ __forceinline__ float Lerp(float a, float b, float w) {
  float diff = b - a;
  return (w < 0.5f && w > -0.5f) ? a + w * diff : b - diff * (1.f - w);
}

// Sum form: buf = μ·buf + g; out = g + μ·buf (Nesterov) or buf.
// Lerp form: buf = lerp(buf, g, 1 − μ); out = lerp(g, buf, μ) (Nesterov) or buf.
__global__ void MomentumKernel(float* buf, const float* g, float* out, int64_t n, float mu,
                               float one_minus_mu, bool nesterov, bool lerp) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float gi = g[i];
    float b = lerp ? Lerp(buf[i], gi, one_minus_mu) : mu * buf[i] + gi;
    buf[i] = b;
    out[i] = !nesterov ? b : lerp ? Lerp(gi, b, mu) : gi + mu * b;
  }
}

// Block j: inv_norm[j] = 1 / (‖staging[j]‖_F + 1e-7), summed in a fixed order.
__global__ void __launch_bounds__(kThreads)
    InvNormKernel(float* inv_norm, const float* staging, int64_t n) {
  __shared__ float shared[32];
  const float* x = staging + int64_t(blockIdx.x) * n;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += x[i] * x[i];
  s = BlockSum(s, shared);
  if (threadIdx.x == 0) inv_norm[blockIdx.x] = 1.f / (sqrtf(s) + 1e-7f);
}

// x (G, r, c) bf16 = normalised staging (G, rows, cols), transposed when rows > cols
// (then r = cols, c = rows). Writes are in x's order.
__global__ void PackKernel(bf16* x, const float* staging, const float* inv_norm, int64_t groups,
                           int64_t r, int64_t c, bool transposed) {
  int64_t per = r * c;
  for (int64_t e = GlobalThread(); e < groups * per; e += GridStride()) {
    int64_t j = e / per, xi = (e - j * per) / c, xj = e % c;
    // Source (row, col) of the matrix as stored: (xi, xj), or (xj, xi) with r = its cols.
    int64_t src = transposed ? xj * r + xi : xi * c + xj;
    x[e] = FromFloat<bf16>(staging[j * per + src] * inv_norm[j]);
  }
}

// p (rows, cols) -= k · X, X = x (r, c) or its transpose when the matrix was transposed.
__global__ void ApplyKernel(float* p, const bf16* x, int64_t rows, int64_t cols, bool transposed,
                            float k) {
  for (int64_t e = GlobalThread(); e < rows * cols; e += GridStride()) {
    int64_t i = e / cols, j = e % cols;
    float u = ToFloat(x[transposed ? j * rows + i : e]);
    p[e] -= k * u;
  }
}

}  // namespace

Status adam_update(CudaContext& ctx, float* p, const float* g, float* m, float* v, int64_t n,
                   const AdamCoeffs& k) {
  if (n == 0) return {};
  AdamKernel<float><<<GridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(p, g, m, v, n, k);
  ABLATE_CUDA_LAUNCH_CHECK("AdamKernel");
  return {};
}

Status adam_update_bf16(CudaContext& ctx, float* p, const float* g, bf16* m, bf16* v, int64_t n,
                        const AdamCoeffs& k) {
  if (n == 0) return {};
  AdamKernel<bf16><<<GridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(p, g, m, v, n, k);
  ABLATE_CUDA_LAUNCH_CHECK("AdamKernel<bf16>");
  return {};
}

Status muon_momentum(CudaContext& ctx, float* buf, const float* g, float* out, int64_t n, double mu,
                     bool nesterov, bool lerp) {
  if (n == 0) return {};
  MomentumKernel<<<GridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
      buf, g, out, n, float(mu), float(1.0 - mu), nesterov, lerp);
  ABLATE_CUDA_LAUNCH_CHECK("MomentumKernel");
  return {};
}

Status muon_inv_norm(CudaContext& ctx, float* inv_norm, const float* staging, int64_t count,
                     int64_t n) {
  if (count == 0) return {};
  InvNormKernel<<<unsigned(count), kThreads, 0, ctx.stream()>>>(inv_norm, staging, n);
  ABLATE_CUDA_LAUNCH_CHECK("InvNormKernel");
  return {};
}

Status muon_pack(CudaContext& ctx, bf16* x, const float* staging, const float* inv_norm,
                 int64_t count, int64_t r, int64_t c, bool transposed) {
  if (count * r * c == 0) return {};
  PackKernel<<<GridFor(count * r * c, kThreads), kThreads, 0, ctx.stream()>>>(
      x, staging, inv_norm, count, r, c, transposed);
  ABLATE_CUDA_LAUNCH_CHECK("PackKernel");
  return {};
}

Status muon_apply(CudaContext& ctx, float* p, const bf16* x, int64_t rows, int64_t cols,
                  bool transposed, float k) {
  if (rows * cols == 0) return {};
  ApplyKernel<<<GridFor(rows * cols, kThreads), kThreads, 0, ctx.stream()>>>(p, x, rows, cols,
                                                                             transposed, k);
  ABLATE_CUDA_LAUNCH_CHECK("ApplyKernel");
  return {};
}

}  // namespace ablate::cuda
