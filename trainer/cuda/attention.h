// Causal self-attention with document masking and block sliding windows on bf16 q, k, v.
//
// Masks: as on the CPU (trainer/cpu/attention.h), every mask of MODEL.md leaves query t a
// contiguous key range [lo(t), t], and lo is non-decreasing in t; lo (B, T) comes from the CPU
// twin's cpu::attention_key_start, computed on the host and uploaded. Both facts are what the
// kernels are built on: a query tile's keys are one contiguous range, and the keys a key tile
// serves end where lo passes the tile (REQUIRES: lo non-decreasing within each sequence).
//
// A second set of kernels keeps scores and accumulators in mma.sync registers instead
// (attention_mma.h, AttentionImpl::kMma); same masks, outputs and determinism.
//
// Method, and why not cuDNN: cuDNN 9's SDPA (graph API) handles causal and sliding-band masks,
// but document masking needs a per-query lower bound that its masks cannot express without a
// full (T, T) bias tensor (34 GB at r18's T = 65,536). So attention is our own flash-style
// kernel: query tiles of 64 rows against key tiles of 64, scores and P·V on the tensor cores
// (WMMA, bf16 in, fp32 accumulate), online softmax with fp32 running max and sum, only the
// log-sum-exp (fp32, (B, NH, T)) kept for the backward. The backward recomputes P from lse and
// is deterministic (no atomics): one kernel per key tile accumulates dK and dV over the query
// tiles that can see it, another per query tile accumulates dQ over its keys. The tiled
// kernels cover head_dim 64 and 128 (the records use 128); any other even head_dim runs a plain
// warp-per-query kernel (correct, not fast; tiny and test shapes).
#ifndef ABLATE_TRAINER_CUDA_ATTENTION_H_
#define ABLATE_TRAINER_CUDA_ATTENTION_H_

#include <cstdint>

#include "trainer/config/attention_impl.h"
#include "trainer/config/result.h"
#include "trainer/cpu/attention.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

// kAuto: the tiled kernels when head_dim is 64 or 128 and every tensor is 16-byte aligned, the
// warp-per-query kernels otherwise. kTiled and kMma fail for other shapes; kWarp always works.
// kMma (attention_mma.h) is not kAuto's choice until it has passed the gpu tests on a GPU
// (bench/trainer_gpu/NOTES.md).
using ablate::AttentionImpl;

// out (B, T, NH, HD) = softmax(scale · q kᵀ over keys [lo, t]) v; lse (B, NH, T) natural-log
// log-sum-exp of the scaled scores. q, k, v, out (B, T, NH, HD) bf16; lo (B, T).
Status attention_forward(CudaContext& ctx, bf16* out, float* lse, const bf16* q, const bf16* k,
                         const bf16* v, const int32_t* lo, int64_t b, int64_t t, int64_t nh,
                         int64_t hd, float scale, AttentionImpl impl = AttentionImpl::kAuto);

// dq, dk, dv (B, T, NH, HD) fp32 = gradients given dout and the forward's out and lse
// (overwrites, unlike the CPU twin's +=). d_scratch: (B, NH, T) floats for rowsum(dout ⊙ out).
Status attention_backward(CudaContext& ctx, float* dq, float* dk, float* dv, const bf16* dout,
                          const bf16* q, const bf16* k, const bf16* v, const bf16* out,
                          const float* lse, const int32_t* lo, float* d_scratch, int64_t b,
                          int64_t t, int64_t nh, int64_t hd, float scale,
                          AttentionImpl impl = AttentionImpl::kAuto);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_ATTENTION_H_
