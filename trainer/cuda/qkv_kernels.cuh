// The fused q/k/v kernels (what they compute: qkv.h), written against a primitives policy P: the
// GPU's (DevicePrimitives, mma_primitives.cuh) or the CPU emulator's (tests/trainer/emulated/),
// which runs these same kernels thread by thread on machines without a GPU. They use P::Thread(),
// P::Block(), P::Smem(), P::Sync() and P::ShflXor().
//
// One warp per (row, head): kWarps of them per block, one block per kWarps (row, head) pairs.
// Lane l holds elements j = l, l + 32, ... of the head, as RmsNormForwardKernel (elementwise.cu)
// and RmsNormBackwardKernel (stream_kernels.cuh) hold the elements of a row, and sums them in the
// same order with the same shuffle tree and the same fmaf's, so the results are those of the single
// passes bit for bit. RoPE pairs (j, j + HD/2) are exchanged through the warp's row of shared
// memory (kWarps · HD fp32 of dynamic shared memory per block).
#ifndef ABLATE_TRAINER_CUDA_QKV_KERNELS_CUH_
#define ABLATE_TRAINER_CUDA_QKV_KERNELS_CUH_

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "trainer/cpu/rmsnorm.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/policy_util.cuh"
#include "trainer/cuda/qkv.h"

namespace ablate::cuda::qkv_kernels {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;

// Dynamic shared memory per block for head_dim hd.
constexpr int SmemBytes(int64_t hd) { return int(kWarps * hd * int64_t(sizeof(float))); }

using policy::Bf16Round;
using policy::WarpTotal;
using policy::WeightOf;

// Where warp w of the block works: its (row, head), whether it has one, and its shared row.
struct Slot {
  int64_t tok, head, pos;
  bool active;
};

template <class P>
__device__ __forceinline__ Slot SlotOf(int64_t n, int64_t t, int64_t nh) {
  int64_t pair = int64_t(P::Block().x) * kWarps + P::Thread() / 32;
  Slot s;
  s.active = pair < n * nh;
  s.tok = pair / nh;
  s.head = pair - s.tok * nh;
  s.pos = t > 0 ? s.tok % t : 0;
  return s;
}

// sh (HD) = rope(sh) with sign +1, its transpose with −1, pairs (j, j + HD/2) in place; one lane
// per pair. `out` (stride 1) receives the rotated values as bf16 when non-null (the forward),
// else they go back to sh (the backward).
template <class P>
__device__ __forceinline__ void Rotate(float* sh, bf16* out, const float* cos_t, const float* sin_t,
                                       int64_t pos, int64_t hd, float sign, int lane) {
  int64_t half = hd / 2;
  for (int64_t j = lane; j < half; j += 32) {
    float x1 = sh[j], x2 = sh[j + half];
    float cs = cos_t[pos * half + j], sn = sign * sin_t[pos * half + j];
    float y1 = fmaf(x1, cs, x2 * sn);  // as RopeKernel
    float y2 = fmaf(x2, cs, -x1 * sn);
    if (out != nullptr) {
      out[j] = __float2bfloat16(y1);
      out[j + half] = __float2bfloat16(y2);
    } else {
      sh[j] = y1;
      sh[j + half] = y2;
    }
  }
}

// q or k of one (row, head): src (HD) from the product; raw, rstd: the norm's input and
// statistic (with qk_norm); out (HD) = rope(norm(src)).
template <class P>
__device__ __forceinline__ void ForwardHead(const QkvForwardArgs& a, const Slot& s, float* sh,
                                            const bf16* src, bf16* raw, float* rstd, bf16* out,
                                            int lane) {
  if (s.active) {
    float ss = 0.f;
    for (int64_t j = lane; j < a.hd; j += 32) {
      float x = __bfloat162float(src[j]);
      if (a.qk_norm) raw[j] = src[j];
      ss = fmaf(x, x, ss);
      sh[j] = x;
    }
    if (a.qk_norm) {
      ss = WarpTotal<P>(ss);
      float r = 1.f / sqrtf(ss / float(a.hd) + float(cpu::kRmsNormEps));
      for (int64_t j = lane; j < a.hd; j += 32) sh[j] = Bf16Round(sh[j] * r);
      if (lane == 0) *rstd = r;
    }
  }
  P::Sync();
  if (s.active) Rotate<P>(sh, out, a.rope_cos, a.rope_sin, s.pos, a.hd, 1.f, lane);
  P::Sync();  // the next head's values overwrite sh
}

template <class P>
__global__ void __launch_bounds__(kThreads) QkvForwardKernel(QkvForwardArgs a) {
  const int lane = P::Thread() % 32;
  const Slot s = SlotOf<P>(a.n, a.t, a.nh);
  float* sh = reinterpret_cast<float*>(P::Smem()) + (P::Thread() / 32) * a.hd;
  const int64_t c = a.nh * a.hd;
  const int64_t in = s.tok * 3 * c + s.head * a.hd;  // this head's q in the product
  const int64_t o = s.tok * c + s.head * a.hd;       // and in the (N, C) tensors
  const int64_t h = s.tok * a.nh + s.head;           // and in the (N·NH) statistics
  const bool norm = a.qk_norm;
  // Inactive warps go through both heads too: they reach every barrier.
  ForwardHead<P>(a, s, sh, a.qkv + in, norm ? a.q_raw + o : nullptr, norm ? a.q_rstd + h : nullptr,
                 a.q + o, lane);
  ForwardHead<P>(a, s, sh, a.qkv + in + c, norm ? a.k_raw + o : nullptr,
                 norm ? a.k_rstd + h : nullptr, a.k + o, lane);
  if (!s.active) return;
  const bf16* src = a.qkv + in + 2 * c;
  float av = WeightOf(a.a), bv = 0.f;
  const float* ve = nullptr;
  if (a.mix == ValueMixKind::kResidual) bv = WeightOf(a.b);
  if (a.mix == ValueMixKind::kEmbed && a.ve_table != nullptr) {
    bv = WeightOf(a.b);
    ve = a.ve_table + int64_t(a.ids[s.tok]) * c + s.head * a.hd;
  }
  const bool v1_is_raw = a.v1 == a.v_raw;
  for (int64_t j = lane; j < a.hd; j += 32) {
    bf16 raw = src[j];
    a.v_raw[o + j] = raw;
    if (a.mix == ValueMixKind::kNone) continue;
    float v = av * __bfloat162float(raw);  // as MixForwardKernel: a·x, then + b·y
    if (a.mix == ValueMixKind::kResidual) {
      v = fmaf(bv, __bfloat162float(v1_is_raw ? raw : a.v1[o + j]), v);
    } else if (ve != nullptr) {
      v = fmaf(bv, ve[j], v);
    }
    a.v[o + j] = __float2bfloat16(v);
  }
}

// dq or dk of one (row, head): grad (HD) of the roped tensor → dst (HD, bf16) = the gradient of
// the product's slice, through RoPE's transpose and (with qk_norm) the norm.
template <class P>
__device__ __forceinline__ void BackwardHead(const QkvBackwardArgs& a, const Slot& s, float* sh,
                                             const float* grad, const bf16* raw, const float* rstd,
                                             bf16* dst, int lane) {
  if (s.active) {
    for (int64_t j = lane; j < a.hd; j += 32) sh[j] = grad[j];
  }
  P::Sync();
  if (s.active) Rotate<P>(sh, nullptr, a.rope_cos, a.rope_sin, s.pos, a.hd, -1.f, lane);
  P::Sync();
  if (!s.active) return;
  if (!a.qk_norm) {
    for (int64_t j = lane; j < a.hd; j += 32) dst[j] = __float2bfloat16(sh[j]);
    return;
  }
  // dx = r·dy − r³·x·(dy·x)/HD, as RmsNormBackwardKernel.
  float dot = 0.f;
  for (int64_t j = lane; j < a.hd; j += 32) dot = fmaf(sh[j], __bfloat162float(raw[j]), dot);
  dot = WarpTotal<P>(dot);
  float r = *rstd;
  float k = r * r * r * dot / float(a.hd);
  for (int64_t j = lane; j < a.hd; j += 32) {
    dst[j] = __float2bfloat16(fmaf(r, sh[j], -k * __bfloat162float(raw[j])));
  }
}

template <class P>
__global__ void __launch_bounds__(kThreads) QkvBackwardKernel(QkvBackwardArgs a) {
  const int lane = P::Thread() % 32;
  const Slot s = SlotOf<P>(a.n, a.t, a.nh);
  float* sh = reinterpret_cast<float*>(P::Smem()) + (P::Thread() / 32) * a.hd;
  const int64_t c = a.nh * a.hd;
  const int64_t out = s.tok * 3 * c + s.head * a.hd;
  const int64_t o = s.tok * c + s.head * a.hd;
  const int64_t h = s.tok * a.nh + s.head;
  const bool norm = a.qk_norm;
  // Inactive warps go through both heads too: they reach every barrier.
  BackwardHead<P>(a, s, sh, a.dq + o, norm ? a.q_raw + o : nullptr, norm ? a.q_rstd + h : nullptr,
                  a.dqkv + out, lane);
  BackwardHead<P>(a, s, sh, a.dk + o, norm ? a.k_raw + o : nullptr, norm ? a.k_rstd + h : nullptr,
                  a.dqkv + out + c, lane);
  if (!s.active) return;
  for (int64_t j = lane; j < a.hd; j += 32) a.dqkv[out + 2 * c + j] = __float2bfloat16(a.dv[o + j]);
}

}  // namespace ablate::cuda::qkv_kernels

#endif  // ABLATE_TRAINER_CUDA_QKV_KERNELS_CUH_
