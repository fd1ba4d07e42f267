// The embedding backward's kernels (what they compute: embedding.h), written against a
// primitives policy P: the GPU's (DevicePrimitives, mma_primitives.cuh) or the CPU emulator's
// (tests/trainer/emulated/), which runs these same kernels thread by thread without a GPU. They
// use P::Thread() and P::Block() only.
//
// Pass 1, block (s, y): channels [y·kThreads, (y+1)·kThreads) of segment s. Each thread sums
// the segment's rows (at most kEmbeddingSegmentRows) in position order; an id's only segment
// adds its sum to the table, a segment of a longer id writes it to its partial row. Pass 2,
// block (m, y): the partial rows of multi-segment id m, added in segment order, then to the
// table. No atomics: each table element is written by one thread of one pass.
#ifndef ABLATE_TRAINER_CUDA_EMBEDDING_KERNELS_CUH_
#define ABLATE_TRAINER_CUDA_EMBEDDING_KERNELS_CUH_

#include <cstdint>

#include "trainer/cuda/embedding_plan.h"
#include "trainer/cuda/policy_util.cuh"

namespace ablate::cuda::embedding_kernels {

constexpr int kThreads = 256;

struct BackwardArgs {
  float* dtable;      // (Ve, C)
  const float* dout;  // (N, C)
  float* partials;    // (plan.partial_rows, C)
  DeviceEmbeddingPlan plan;
  int64_t c;
};

// Blocks along y for C channels.
constexpr unsigned ChannelBlocks(int64_t c) { return unsigned((c + kThreads - 1) / kThreads); }

template <class P>
__global__ void __launch_bounds__(kThreads) SegmentSumKernel(BackwardArgs a) {
  int64_t s = P::Block().x;
  int64_t j = int64_t(P::Block().y) * kThreads + P::Thread();
  if (j >= a.c) return;
  const DeviceEmbeddingPlan& p = a.plan;
  float sum = 0.f;
  for (int32_t r = p.seg_offsets[s]; r < p.seg_offsets[s + 1]; ++r) {
    sum += a.dout[int64_t(p.positions[r]) * a.c + j];
  }
  int32_t slot = p.seg_slot[s];
  if (slot < 0) {
    a.dtable[int64_t(p.seg_row[s]) * a.c + j] += sum;
  } else {
    a.partials[int64_t(slot) * a.c + j] = sum;
  }
}

template <class P>
__global__ void __launch_bounds__(kThreads) MergeSegmentsKernel(BackwardArgs a) {
  int64_t m = P::Block().x;
  int64_t j = int64_t(P::Block().y) * kThreads + P::Thread();
  if (j >= a.c) return;
  const DeviceEmbeddingPlan& p = a.plan;
  int32_t first = p.multi_slots[m], end = p.multi_slots[m + 1];
  float total = a.partials[int64_t(first) * a.c + j];
  for (int32_t k = first + 1; k < end; ++k) total += a.partials[int64_t(k) * a.c + j];
  a.dtable[int64_t(p.multi_row[m]) * a.c + j] += total;
}

}  // namespace ablate::cuda::embedding_kernels

#endif  // ABLATE_TRAINER_CUDA_EMBEDDING_KERNELS_CUH_
