// How the loss head cuts its N rows (softcap_cross_entropy.h): chunks whose fp32 logits the head
// GEMM writes and the classifier reads, and groups of chunks whose bf16 dlogits the two backward
// GEMMs take at once, so that dW (V, C) fp32 is read and written once per group instead of once
// per chunk. Host code only (the plan's tests build without CUDA).
#ifndef ABLATE_TRAINER_CUDA_HEAD_ROWS_H_
#define ABLATE_TRAINER_CUDA_HEAD_ROWS_H_

#include <algorithm>
#include <cstdint>

namespace ablate::cuda {

// The head's scratch at most: one chunk of fp32 logits and one group of bf16 dlogits.
inline constexpr int64_t kHeadScratchBytes = int64_t(1536) << 20;
// Rows of a chunk where the vocabulary lets it: (2048, 768) · (768, 50304) is still a GEMM of
// 158 GFLOP, and a small chunk leaves the scratch to the dlogits of a large group.
inline constexpr int64_t kHeadChunkRows = 2048;

struct HeadRows {
  int64_t chunk = 0;  // rows of logits per classifier call
  int64_t group = 0;  // rows of dlogits per backward GEMM pair: chunk <= group <= n
};

// The rows for n tokens and vocabulary v within `budget` bytes: chunks of kHeadChunkRows (fewer
// when one chunk's logits and dlogits would not fit, a multiple of 64, at least 64, at most n);
// groups of as many chunks as the rest of the budget holds, or of fewer where as few groups
// still cover the n rows (less scratch for the same number of dW passes).
inline HeadRows PlanHeadRows(int64_t n, int64_t v, int64_t budget = kHeadScratchBytes) {
  HeadRows r;
  if (n <= 0 || v <= 0) return r;
  int64_t fit = budget / (v * 6) / 64 * 64;
  r.chunk = std::min(std::max<int64_t>(64, std::min(kHeadChunkRows, fit)), n);
  int64_t chunks = (n + r.chunk - 1) / r.chunk;
  int64_t per_group = std::max<int64_t>(1, (budget - r.chunk * v * 4) / (v * 2) / r.chunk);
  int64_t groups = (chunks + per_group - 1) / per_group;
  r.group = std::min(n, (chunks + groups - 1) / groups * r.chunk);
  return r;
}

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_HEAD_ROWS_H_
