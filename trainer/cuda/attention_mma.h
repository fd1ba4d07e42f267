// Register-resident attention kernels (AttentionImpl::kMma): the same masks, outputs and
// determinism as the tiled WMMA kernels of attention.cu, with scores, probabilities and
// accumulators kept in mma.sync fragments instead of going through shared memory.
//
// Method (FlashAttention-2's structure, written for the masks of MODEL.md): a block of 4 warps
// owns 64 rows (queries in the forward and dQ kernels, keys in the dK/dV kernel); each warp
// owns 16 of them. The other side streams through in tiles of 64 rows, double-buffered with
// cp.async so the next tile loads while this one is computed. Products are mma.sync
// m16n8k16 (bf16 in, fp32 accumulate) on operands read with ldmatrix from padded rows (HD + 8
// bf16: the 8 rows of one ldmatrix fall in different banks). The softmax runs on the score
// fragments in registers; probabilities become the next product's A operand without leaving
// registers (an m16n8 accumulator pair has the layout of an m16k16 A fragment). The backward is
// deterministic (no atomics), as the tiled kernels: one kernel per key block accumulates dK and
// dV, another per query block dQ, each recomputing the scores from lse.
//
// Tiles whose every (query, key) pair is visible skip the mask arithmetic; the others apply the
// mask per element (key ≥ lo(query), key ≤ query, query < T).
#ifndef ABLATE_TRAINER_CUDA_ATTENTION_MMA_H_
#define ABLATE_TRAINER_CUDA_ATTENTION_MMA_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda::mma_attention {

// As attention_forward. REQUIRES: hd 64 or 128, 16-byte aligned q, k, v, out.
Status Forward(CudaContext& ctx, bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
               const int32_t* lo, int64_t b, int64_t t, int64_t nh, int64_t hd, float scale);

// As attention_backward, given d = rowsum(dout ⊙ out) (B, NH, T). REQUIRES: as Forward.
Status Backward(CudaContext& ctx, float* dq, float* dk, float* dv, const bf16* dout, const bf16* q,
                const bf16* k, const bf16* v, const float* lse, const float* d, const int32_t* lo,
                int64_t b, int64_t t, int64_t nh, int64_t hd, float scale);

}  // namespace ablate::cuda::mma_attention

#endif  // ABLATE_TRAINER_CUDA_ATTENTION_MMA_H_
