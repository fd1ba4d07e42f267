// The passes between the fused QKV product and attention, and their backward, as one kernel
// each (kernels: qkv_kernels.cuh). Forward: split the (N, 3C) product into q, k, v; per head,
// qk-norm (RMSNorm over head_dim) and RoPE on q and k; the value mix (value residual or value
// embedding) on v. Backward: RoPE's transpose and the qk-norm backward on dq and dk, and the
// merge of dq, dk, dv into the (N, 3C) bf16 gradient of the product.
//
// They compute what the chain of single passes computes (split_qkv, rmsnorm_forward<bf16, bf16>,
// rope_forward<bf16>, residual_mix_forward; rope_backward<float>, rmsnorm_backward<bf16>,
// merge_qkv), rounding to bf16 where that chain stores bf16, so each tensor is read once and
// written once instead of once per pass. CPU twins: trainer/cpu/rmsnorm.h, rope.h, residual.h.
#ifndef ABLATE_TRAINER_CUDA_QKV_H_
#define ABLATE_TRAINER_CUDA_QKV_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/mix_weight.h"

namespace ablate::cuda {

class CudaContext;
struct RopeTable;

// Largest head_dim the kernels take (one warp's shared row of fp32).
inline constexpr int64_t kQkvMaxHeadDim = 1024;

// How v is made from v_raw: v = a·v_raw + b·y in fp32, stored as bf16 (no mixing: v = v_raw).
enum class ValueMixKind { kNone, kResidual, kEmbed };

struct QkvForwardArgs {
  const bf16* qkv = nullptr;  // (N, 3C): q | k | v per row
  // (N, C), written only with qk_norm (the backward's norm input); may be null otherwise.
  bf16 *q_raw = nullptr, *k_raw = nullptr;
  bf16* v_raw = nullptr;                       // (N, C), always written
  bf16 *q = nullptr, *k = nullptr;             // (N, C) after qk-norm and RoPE
  bf16* v = nullptr;                           // (N, C); may be v_raw when mix is kNone
  float *q_rstd = nullptr, *k_rstd = nullptr;  // (N·NH), with qk_norm
  const float* rope_cos = nullptr;             // (T, HD/2)
  const float* rope_sin = nullptr;
  int64_t n = 0, t = 0, nh = 0, hd = 0;  // N = B·T rows; C = NH·HD
  bool qk_norm = false;
  ValueMixKind mix = ValueMixKind::kNone;
  MixWeight a, b;
  // kResidual: y = v1 (N, C), which may be v_raw itself (the first attention layer).
  const bf16* v1 = nullptr;
  // kEmbed: y = ve_table[ids[row]] (V, C) when ve_table is set; else v = a·v_raw.
  const float* ve_table = nullptr;
  const int32_t* ids = nullptr;  // (N)
};

struct QkvBackwardArgs {
  bf16* dqkv = nullptr;                           // (N, 3C) out
  const float *dq = nullptr, *dk = nullptr;       // (N, C) gradients of the roped q, k
  const float* dv = nullptr;                      // (N, C) gradient of v_raw
  const bf16 *q_raw = nullptr, *k_raw = nullptr;  // with qk_norm
  const float *q_rstd = nullptr, *k_rstd = nullptr;
  const float* rope_cos = nullptr;
  const float* rope_sin = nullptr;
  int64_t n = 0, t = 0, nh = 0, hd = 0;
  bool qk_norm = false;
};

// REQUIRES: table built for head_dim hd and at least t positions; hd even, ≤ kQkvMaxHeadDim.
// The launchers fill rope_cos/rope_sin from `table` and check the shapes.
Status qkv_forward(CudaContext& ctx, QkvForwardArgs args, const RopeTable& table);
Status qkv_backward(CudaContext& ctx, QkvBackwardArgs args, const RopeTable& table);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_QKV_H_
