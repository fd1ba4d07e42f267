// Memory-bound ops: the embedding gather (its backward's kernels: embedding_kernels.cuh),
// RMSNorm (the backward's kernels, with the mix backward's and the gradient add's:
// stream_kernels.cuh), RoPE, stream mixes, the MLP activation and layout/precision conversions.
// Each is one pass over its tensors with fp32 arithmetic; rows that need a reduction (RMSNorm) get
// one warp each. Multiply-adds are written as fmaf, so that the fused q/k/v kernels
// (qkv_kernels.cuh), which spell them the same, give the same bits whatever the compiler would
// contract.
#include <cmath>
#include <string>
#include <utility>

#include "trainer/cuda/convert.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/embedding.h"
#include "trainer/cuda/embedding_kernels.cuh"
#include "trainer/cuda/kernel_util.cuh"
#include "trainer/cuda/mlp_act.h"
#include "trainer/cuda/mma_primitives.cuh"
#include "trainer/cuda/policy_util.cuh"
#include "trainer/cuda/residual.h"
#include "trainer/cuda/rmsnorm.h"
#include "trainer/cuda/rope.h"
#include "trainer/cuda/stream_kernels.cuh"

namespace ablate::cuda {
namespace {

namespace sk = stream_kernels;

using kernel::FromFloat;
using kernel::GlobalThread;
using kernel::GridFor;
using kernel::GridStride;
using kernel::ToFloat;
using kernel::WarpSum;

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;  // one warp per row

// ---- Embedding ----------------------------------------------------------------------------

__global__ void EmbeddingForwardKernel(float* out, const float* table, const int32_t* idx,
                                       int64_t n, int64_t c) {
  for (int64_t i = GlobalThread(); i < n * c; i += GridStride()) {
    int64_t row = i / c;
    out[i] = table[int64_t(idx[row]) * c + (i - row * c)];
  }
}

// ---- RMSNorm ------------------------------------------------------------------------------

template <class TIn, class TOut>
__global__ void RmsNormForwardKernel(TOut* out, float* rstd, const TIn* inp, int64_t n, int64_t c) {
  int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;  // whole warps leave together
  const TIn* x = inp + row * c;
  float ss = 0.f;
  for (int64_t j = lane; j < c; j += 32) {
    float v = ToFloat(x[j]);
    ss = fmaf(v, v, ss);
  }
  ss = WarpSum(ss);
  float r = 1.f / sqrtf(ss / float(c) + float(cpu::kRmsNormEps));
  TOut* y = out + row * c;
  for (int64_t j = lane; j < c; j += 32) y[j] = FromFloat<TOut>(ToFloat(x[j]) * r);
  if (lane == 0) rstd[row] = r;
}

// ---- RoPE ---------------------------------------------------------------------------------

// One thread per rotated pair; sign = +1 rotates, −1 applies the transpose.
template <class T>
__global__ void RopeKernel(T* out, const T* inp, const float* cos_t, const float* sin_t, int64_t b,
                           int64_t t, int64_t nh, int64_t hd, float sign) {
  int64_t half = hd / 2, pairs = b * t * nh * half;
  for (int64_t i = GlobalThread(); i < pairs; i += GridStride()) {
    int64_t j = i % half, rest = i / half;  // rest = bt·nh + h
    int64_t pos = (rest / nh) % t;
    int64_t base = rest * hd;
    float x1 = ToFloat(inp[base + j]), x2 = ToFloat(inp[base + j + half]);
    float cs = cos_t[pos * half + j], sn = sign * sin_t[pos * half + j];
    out[base + j] = FromFloat<T>(fmaf(x1, cs, x2 * sn));
    out[base + j + half] = FromFloat<T>(fmaf(x2, cs, -x1 * sn));
  }
}

// ---- Stream mixes -------------------------------------------------------------------------

using policy::Bf16Round;
using policy::WeightOf;

template <class TOut, class TX, class TY>
__global__ void MixForwardKernel(TOut* out, const TX* x, MixWeight a, const TY* y, MixWeight b,
                                 int64_t n, bool bf16_stream) {
  float av = WeightOf(a), bv = y != nullptr ? WeightOf(b) : 0.f;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float v;
    if (bf16_stream) {
      v = Bf16Round(av * ToFloat(x[i]));
      if (y != nullptr) v = Bf16Round(v + Bf16Round(bv * ToFloat(y[i])));
    } else {
      v = av * ToFloat(x[i]);
      if (y != nullptr) v = fmaf(bv, ToFloat(y[i]), v);
    }
    out[i] = FromFloat<TOut>(v);
  }
}

// ---- MLP activation -----------------------------------------------------------------------

constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluC = 0.044715f;

__device__ __forceinline__ float Act(float u, MlpAct act) {
  if (act == MlpAct::kRelu2) return u > 0.f ? u * u : 0.f;
  float th = tanhf(kGeluK * (u + kGeluC * u * u * u));
  return 0.5f * u * (1.f + th);
}

__device__ __forceinline__ float ActGrad(float u, MlpAct act) {
  if (act == MlpAct::kRelu2) return u > 0.f ? 2.f * u : 0.f;
  float th = tanhf(kGeluK * (u + kGeluC * u * u * u));
  float dinner = kGeluK * (1.f + 3.f * kGeluC * u * u);
  return 0.5f * (1.f + th) + 0.5f * u * (1.f - th * th) * dinner;
}

__global__ void MlpActForwardKernel(bf16* out, const bf16* inp, int64_t n, MlpAct act) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    out[i] = FromFloat<bf16>(Act(ToFloat(inp[i]), act));
  }
}

__global__ void MlpActBackwardKernel(bf16* dinp, const bf16* dout, const bf16* inp, int64_t n,
                                     MlpAct act) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    dinp[i] = FromFloat<bf16>(ActGrad(ToFloat(inp[i]), act) * ToFloat(dout[i]));
  }
}

// ---- Conversions --------------------------------------------------------------------------

__global__ void ToBf16Kernel(bf16* out, const float* in, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) out[i] = FromFloat<bf16>(in[i]);
}

__global__ void SplitQkvKernel(bf16* q, bf16* k, bf16* v, const bf16* qkv, int64_t n, int64_t c) {
  for (int64_t i = GlobalThread(); i < n * c; i += GridStride()) {
    int64_t row = i / c, col = i - row * c;
    const bf16* src = qkv + row * 3 * c + col;
    q[i] = src[0];
    k[i] = src[c];
    v[i] = src[2 * c];
  }
}

__global__ void MergeQkvKernel(bf16* dqkv, const float* dq, const float* dk, const float* dv,
                               int64_t n, int64_t c) {
  for (int64_t i = GlobalThread(); i < n * c; i += GridStride()) {
    int64_t row = i / c, col = i - row * c;
    bf16* dst = dqkv + row * 3 * c + col;
    dst[0] = FromFloat<bf16>(dq[i]);
    dst[c] = FromFloat<bf16>(dk[i]);
    dst[2 * c] = FromFloat<bf16>(dv[i]);
  }
}

unsigned int RowBlocks(int64_t rows) {
  return unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

}  // namespace

// ---- Launchers ----------------------------------------------------------------------------

Status embedding_forward(CudaContext& ctx, float* out, const float* table, const int32_t* idx,
                         int64_t n, int64_t c) {
  if (n * c == 0) return {};
  EmbeddingForwardKernel<<<GridFor(n * c, kThreads), kThreads, 0, ctx.stream()>>>(out, table, idx,
                                                                                  n, c);
  ABLATE_CUDA_LAUNCH_CHECK("EmbeddingForwardKernel");
  return {};
}

Status embedding_backward(CudaContext& ctx, float* dtable, const float* dout,
                          const DeviceEmbeddingPlan& plan, int64_t c, float* partials,
                          int64_t partial_capacity) {
  if (plan.segments == 0 || c == 0) return {};
  if (plan.partial_rows > partial_capacity) {
    return Error{"embedding_backward: the plan needs " + std::to_string(plan.partial_rows) +
                     " partial-sum rows, the buffer holds " + std::to_string(partial_capacity),
                 ""};
  }
  namespace ek = embedding_kernels;
  ek::BackwardArgs args{dtable, dout, partials, plan, c};
  ek::SegmentSumKernel<DevicePrimitives>
      <<<dim3(unsigned(plan.segments), ek::ChannelBlocks(c)), ek::kThreads, 0, ctx.stream()>>>(
          args);
  ABLATE_CUDA_LAUNCH_CHECK("SegmentSumKernel");
  if (plan.multi == 0) return {};
  ek::MergeSegmentsKernel<DevicePrimitives>
      <<<dim3(unsigned(plan.multi), ek::ChannelBlocks(c)), ek::kThreads, 0, ctx.stream()>>>(args);
  ABLATE_CUDA_LAUNCH_CHECK("MergeSegmentsKernel");
  return {};
}

template <class TIn, class TOut>
Status rmsnorm_forward(CudaContext& ctx, TOut* out, float* rstd, const TIn* inp, int64_t n,
                       int64_t c) {
  if (n == 0) return {};
  RmsNormForwardKernel<TIn, TOut>
      <<<RowBlocks(n), kThreads, 0, ctx.stream()>>>(out, rstd, inp, n, c);
  ABLATE_CUDA_LAUNCH_CHECK("RmsNormForwardKernel");
  return {};
}

template <class TIn>
Status rmsnorm_backward(CudaContext& ctx, float* dinp, const float* dout, const TIn* inp,
                        const float* rstd, int64_t n, int64_t c, Output mode, bf16* dinp_bf16) {
  if (n == 0) return {};
  sk::NormBackwardArgs<TIn> args{dinp, dinp_bf16, dout, inp, rstd, n, c, mode == Output::kAdd};
  sk::RmsNormBackwardKernel<DevicePrimitives, TIn>
      <<<sk::RowBlocks(n), sk::kThreads, 0, ctx.stream()>>>(args);
  ABLATE_CUDA_LAUNCH_CHECK("RmsNormBackwardKernel");
  return {};
}

Result<RopeTable> rope_table(CudaContext& ctx, int64_t seq_len, int64_t head_dim,
                             cpu::RopeKind kind, double base) {
  cpu::RopeTable<float> host = cpu::rope_table<float>(seq_len, head_dim, kind, base);
  RopeTable table;
  table.seq_len = seq_len;
  table.head_dim = head_dim;
  int64_t n = int64_t(host.cos.size());
  ABLATE_RETURN_IF_ERROR(table.cos.Allocate(n, "the RoPE cos table"));
  ABLATE_RETURN_IF_ERROR(table.sin.Allocate(n, "the RoPE sin table"));
  ABLATE_RETURN_IF_ERROR(ctx.ToDevice(table.cos.get(), host.cos.data(), n * 4));
  ABLATE_RETURN_IF_ERROR(ctx.ToDevice(table.sin.get(), host.sin.data(), n * 4));
  ABLATE_RETURN_IF_ERROR(ctx.Synchronize());  // `host` goes out of scope
  return Result<RopeTable>(std::move(table));
}

template <class T>
static Status LaunchRope(CudaContext& ctx, T* out, const T* inp, const RopeTable& table, int64_t b,
                         int64_t t, int64_t nh, int64_t hd, float sign) {
  if (t > table.seq_len || hd != table.head_dim) {
    return Error{"rope: tensor (T " + std::to_string(t) + ", HD " + std::to_string(hd) +
                     ") does not fit the table (T " + std::to_string(table.seq_len) + ", HD " +
                     std::to_string(table.head_dim) + ")",
                 ""};
  }
  int64_t pairs = b * t * nh * (hd / 2);
  if (pairs == 0) return {};
  RopeKernel<T><<<GridFor(pairs, kThreads), kThreads, 0, ctx.stream()>>>(
      out, inp, table.cos.get(), table.sin.get(), b, t, nh, hd, sign);
  ABLATE_CUDA_LAUNCH_CHECK("RopeKernel");
  return {};
}

template <class T>
Status rope_forward(CudaContext& ctx, T* out, const T* inp, const RopeTable& table, int64_t b,
                    int64_t t, int64_t nh, int64_t hd) {
  return LaunchRope(ctx, out, inp, table, b, t, nh, hd, 1.f);
}

template <class T>
Status rope_backward(CudaContext& ctx, T* dinp, const T* dout, const RopeTable& table, int64_t b,
                     int64_t t, int64_t nh, int64_t hd) {
  return LaunchRope(ctx, dinp, dout, table, b, t, nh, hd, -1.f);
}

template <class TOut, class TX, class TY>
Status residual_mix_forward(CudaContext& ctx, TOut* out, const TX* x, MixWeight a, const TY* y,
                            MixWeight b, int64_t n, Rounding rounding) {
  if (n == 0) return {};
  MixForwardKernel<TOut, TX, TY><<<GridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
      out, x, a, y, b, n, rounding == Rounding::kBf16);
  ABLATE_CUDA_LAUNCH_CHECK("MixForwardKernel");
  return {};
}

template <class TX, class TY>
Status residual_mix_backward(CudaContext& ctx, const MixGrads& g, const float* dout, const TX* x,
                             MixWeight a, const TY* y, MixWeight b, int64_t n) {
  static_assert(2 * sk::kMixBlocks <= CudaContext::kReduceScratch);
  if (n == 0) return {};
  if (y == nullptr && (g.dy != nullptr || g.db.ptr != nullptr)) {
    return Error{"residual_mix_backward: dy or db asked for without y", ""};
  }
  sk::MixBackwardArgs<TX, TY> args{g, dout, x, a, y, b, n, ctx.reduce_scratch()};
  sk::MixBackwardKernel<DevicePrimitives, TX, TY>
      <<<sk::kMixBlocks, sk::kThreads, sk::kSumSmemBytes, ctx.stream()>>>(args);
  ABLATE_CUDA_LAUNCH_CHECK("MixBackwardKernel");
  if (g.da.ptr == nullptr && g.db.ptr == nullptr) return {};
  sk::MixFinalizeKernel<DevicePrimitives>
      <<<1, sk::kMixBlocks, sk::kSumSmemBytes, ctx.stream()>>>(args.partial, g.da, g.db);
  ABLATE_CUDA_LAUNCH_CHECK("MixFinalizeKernel");
  return {};
}

Status add_into(CudaContext& ctx, float* dst, const float* src, int64_t n, bf16* dst_bf16) {
  if (n == 0) return {};
  unsigned blocks = GridFor(n, sk::kThreads);
  sk::AddArgs args{dst, dst_bf16, src, n, int64_t(blocks) * sk::kThreads};
  sk::AddKernel<DevicePrimitives><<<blocks, sk::kThreads, 0, ctx.stream()>>>(args);
  ABLATE_CUDA_LAUNCH_CHECK("AddKernel");
  return {};
}

Status mlp_act_forward(CudaContext& ctx, bf16* out, const bf16* inp, int64_t n, MlpAct act) {
  if (n == 0) return {};
  MlpActForwardKernel<<<GridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(out, inp, n, act);
  ABLATE_CUDA_LAUNCH_CHECK("MlpActForwardKernel");
  return {};
}

Status mlp_act_backward(CudaContext& ctx, bf16* dinp, const bf16* dout, const bf16* inp, int64_t n,
                        MlpAct act) {
  if (n == 0) return {};
  MlpActBackwardKernel<<<GridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(dinp, dout, inp, n,
                                                                            act);
  ABLATE_CUDA_LAUNCH_CHECK("MlpActBackwardKernel");
  return {};
}

Status to_bf16(CudaContext& ctx, bf16* out, const float* in, int64_t n) {
  if (n == 0) return {};
  ToBf16Kernel<<<GridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(out, in, n);
  ABLATE_CUDA_LAUNCH_CHECK("ToBf16Kernel");
  return {};
}

Status split_qkv(CudaContext& ctx, bf16* q, bf16* k, bf16* v, const bf16* qkv, int64_t n,
                 int64_t c) {
  if (n * c == 0) return {};
  SplitQkvKernel<<<GridFor(n * c, kThreads), kThreads, 0, ctx.stream()>>>(q, k, v, qkv, n, c);
  ABLATE_CUDA_LAUNCH_CHECK("SplitQkvKernel");
  return {};
}

Status merge_qkv(CudaContext& ctx, bf16* dqkv, const float* dq, const float* dk, const float* dv,
                 int64_t n, int64_t c) {
  if (n * c == 0) return {};
  MergeQkvKernel<<<GridFor(n * c, kThreads), kThreads, 0, ctx.stream()>>>(dqkv, dq, dk, dv, n, c);
  ABLATE_CUDA_LAUNCH_CHECK("MergeQkvKernel");
  return {};
}

template Status rmsnorm_forward<float, float>(CudaContext&, float*, float*, const float*, int64_t,
                                              int64_t);
template Status rmsnorm_forward<float, bf16>(CudaContext&, bf16*, float*, const float*, int64_t,
                                             int64_t);
template Status rmsnorm_forward<bf16, bf16>(CudaContext&, bf16*, float*, const bf16*, int64_t,
                                            int64_t);
template Status rmsnorm_backward<float>(CudaContext&, float*, const float*, const float*,
                                        const float*, int64_t, int64_t, Output, bf16*);
template Status rmsnorm_backward<bf16>(CudaContext&, float*, const float*, const bf16*,
                                       const float*, int64_t, int64_t, Output, bf16*);
template Status rope_forward<bf16>(CudaContext&, bf16*, const bf16*, const RopeTable&, int64_t,
                                   int64_t, int64_t, int64_t);
template Status rope_forward<float>(CudaContext&, float*, const float*, const RopeTable&, int64_t,
                                    int64_t, int64_t, int64_t);
template Status rope_backward<bf16>(CudaContext&, bf16*, const bf16*, const RopeTable&, int64_t,
                                    int64_t, int64_t, int64_t);
template Status rope_backward<float>(CudaContext&, float*, const float*, const RopeTable&, int64_t,
                                     int64_t, int64_t, int64_t);
template Status residual_mix_forward<float, float, float>(CudaContext&, float*, const float*,
                                                          MixWeight, const float*, MixWeight,
                                                          int64_t, Rounding);
template Status residual_mix_forward<float, float, bf16>(CudaContext&, float*, const float*,
                                                         MixWeight, const bf16*, MixWeight, int64_t,
                                                         Rounding);
template Status residual_mix_forward<bf16, bf16, bf16>(CudaContext&, bf16*, const bf16*, MixWeight,
                                                       const bf16*, MixWeight, int64_t, Rounding);
template Status residual_mix_forward<bf16, bf16, float>(CudaContext&, bf16*, const bf16*, MixWeight,
                                                        const float*, MixWeight, int64_t, Rounding);
template Status residual_mix_backward<float, float>(CudaContext&, const MixGrads&, const float*,
                                                    const float*, MixWeight, const float*,
                                                    MixWeight, int64_t);
template Status residual_mix_backward<bf16, bf16>(CudaContext&, const MixGrads&, const float*,
                                                  const bf16*, MixWeight, const bf16*, MixWeight,
                                                  int64_t);
template Status residual_mix_backward<bf16, float>(CudaContext&, const MixGrads&, const float*,
                                                   const bf16*, MixWeight, const float*, MixWeight,
                                                   int64_t);

}  // namespace ablate::cuda
