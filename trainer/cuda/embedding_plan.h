// The embedding backward's plan: a batch's rows grouped by id and cut into segments (what the
// backward does with it: embedding.h). Host code only, so that the CPU emulator's tests build
// it without the CUDA backend.
#ifndef ABLATE_TRAINER_CUDA_EMBEDDING_PLAN_H_
#define ABLATE_TRAINER_CUDA_EMBEDDING_PLAN_H_

#include <cstdint>
#include <vector>

namespace ablate::cuda {

// Rows per segment: few enough that the most frequent id's rows are spread over many blocks.
inline constexpr int32_t kEmbeddingSegmentRows = 32;

// The rows of a batch grouped by id (host side).
struct EmbeddingPlan {
  std::vector<int32_t> ids;        // (U) distinct ids, increasing
  std::vector<int32_t> offsets;    // (U + 1) rows of ids[u] are positions[offsets[u], offsets[u+1])
  std::vector<int32_t> positions;  // (N) row indices, increasing within each id
  // Segments: runs of at most kEmbeddingSegmentRows consecutive entries of positions, all of one
  // id; an id's segments are consecutive and in position order.
  std::vector<int32_t> seg_offsets;  // (S + 1) segment s is positions[seg_offsets[s], [s+1])
  std::vector<int32_t> seg_row;      // (S) its id (the table row it adds to)
  std::vector<int32_t> seg_slot;     // (S) -1: the id's only segment, added to the table at once;
                                     // else its row in the partial sums
  std::vector<int32_t> multi_row;    // (M) the ids with more than one segment
  std::vector<int32_t> multi_slots;  // (M + 1) their segments' partial rows [slots[m], [m+1])
};

// Groups the n rows of idx by id (a counting sort) and cuts the segments of at most
// `segment_rows` rows (raised to kEmbeddingSegmentRows if smaller, which the bounds below assume;
// the bench passes a huge value to time the backward as it was before segments, one block
// column per id). REQUIRES: 0 <= idx[i].
EmbeddingPlan BuildEmbeddingPlan(const int32_t* idx, int64_t n,
                                 int32_t segment_rows = kEmbeddingSegmentRows);

// The partial-sum rows a plan of n rows can need (its ids of more than one segment), at most.
int64_t EmbeddingPartialRows(int64_t n);

// The int32 count PackEmbeddingPlan can write for a plan of n rows, at most.
int64_t PackedEmbeddingPlanInts(int64_t n);

// What of a plan the device reads, in one int32 array: positions, seg_offsets, seg_row,
// seg_slot, multi_row, multi_slots. Returns the count written (<= PackedEmbeddingPlanInts(N)).
int64_t PackEmbeddingPlan(const EmbeddingPlan& plan, int32_t* out);

// The same plan in device memory (pointers into one packed array the caller owns).
struct DeviceEmbeddingPlan {
  const int32_t* positions = nullptr;
  const int32_t* seg_offsets = nullptr;
  const int32_t* seg_row = nullptr;
  const int32_t* seg_slot = nullptr;
  const int32_t* multi_row = nullptr;
  const int32_t* multi_slots = nullptr;
  int64_t segments = 0;      // S
  int64_t multi = 0;         // M
  int64_t partial_rows = 0;  // rows of partial sums the backward writes
};

// The device view of `plan` packed (PackEmbeddingPlan) at device address `packed`.
DeviceEmbeddingPlan DeviceEmbeddingPlanAt(const int32_t* packed, const EmbeddingPlan& plan);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_EMBEDDING_PLAN_H_
