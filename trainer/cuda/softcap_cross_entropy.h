// The loss head: optional logit softcap (tanh or sigmoid), softmax cross-entropy and its
// gradient as one fused classifier kernel, and the whole output head in row chunks.
// CPU twin: trainer/cpu/softcap_cross_entropy.h.
//
// Fusion and precision: the head GEMM writes fp32 logits for one chunk of rows; the classifier
// reads each row twice (max/sum, then the gradient) and writes the loss and, when training,
// dloss·d(loss)/d(raw logits) as bf16 into its rows of the group's dlogits; once a group of
// chunks is done, the two backward GEMMs take the whole group (head_rows.h). No (N, V) tensor is
// ever allocated: a chunk's logits are reused by the next chunk, a group's dlogits by the next
// group.
#ifndef ABLATE_TRAINER_CUDA_SOFTCAP_CROSS_ENTROPY_H_
#define ABLATE_TRAINER_CUDA_SOFTCAP_CROSS_ENTROPY_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cpu/softcap_cross_entropy.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

using cpu::Softcap;
using cpu::SoftcapKind;

// The classifier's kernel: two passes over each row of logits (read twice, capped twice), or
// the row kept in registers (read once, capped once; classifier_kernels.cuh; rows of at most
// 51,200, wider ones take the two passes). The head runs kDefaultClassifier: the two passes
// until a lease has timed both (bench/trainer_gpu/NOTES.md item 15) and run
// CudaOps.FusedClassifierMatchesCpuForwardThenBackward on both; one line to switch.
enum class ClassifierImpl { kTwoPass, kRowInRegisters };
inline constexpr ClassifierImpl kDefaultClassifier = ClassifierImpl::kTwoPass;

// losses (N) = logsumexp(capped row) − capped[target] for raw logits (N, V) fp32. When dlogits
// is non-null, also dlogits (N, V) bf16 = dloss · d(loss)/d(raw logits) in the same pass (the
// CPU twin's softcap_cross_entropy_forward then _backward). REQUIRES: 0 <= targets[i] < V.
Status softcap_cross_entropy_forward(CudaContext& ctx, float* losses, bf16* dlogits,
                                     const float* logits, const int32_t* targets, int64_t n,
                                     int64_t v, Softcap cap, float dloss,
                                     ClassifierImpl impl = kDefaultClassifier);

// acc (1 double) += (Σ losses / n) / divisor, summed in double in a fixed order (CPU twin:
// cpu::mean_loss).
Status loss_accumulate(CudaContext& ctx, double* acc, const float* losses, int64_t n,
                       int64_t divisor);

// dst (1 float, on the device) = float(acc); acc = 0.
Status loss_move(CudaContext& ctx, float* dst, double* acc);

// Scratch of the chunked head: chunk_rows rows of fp32 logits, group_rows rows of bf16 dlogits
// (PlanHeadRows says how many of each).
struct LmHeadScratch {
  float* logits = nullptr;  // (chunk_rows, V)
  bf16* dlogits = nullptr;  // (group_rows, V); may be null for evaluation only
  int64_t chunk_rows = 0;
  int64_t group_rows = 0;  // >= chunk_rows when training
};

// losses (N) of the head: logits = x (N, C) · wᵀ, w (V, C), then the classifier, chunk by chunk.
Status lm_head_forward(CudaContext& ctx, float* losses, const bf16* x, const bf16* w,
                       const int32_t* targets, int64_t n, int64_t c, int64_t v, Softcap cap,
                       const LmHeadScratch& scratch);

// As lm_head_forward, and after each group of chunks the backward of dloss · Σ losses over the
// group's rows: dx (N, C) fp32 = the gradient (overwrites), dw (V, C) fp32 += the gradient.
Status lm_head_forward_backward(CudaContext& ctx, float* losses, float* dx, float* dw,
                                const bf16* x, const bf16* w, const int32_t* targets, int64_t n,
                                int64_t c, int64_t v, Softcap cap, float dloss,
                                const LmHeadScratch& scratch);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_SOFTCAP_CROSS_ENTROPY_H_
