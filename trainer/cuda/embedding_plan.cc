// BuildEmbeddingPlan: a counting sort of row indices by id (O(N + max id)), stable, so rows of
// one id stay in increasing position order and the device sums them in that order; then the
// segments, and the plan packed for one copy to the device.
#include "trainer/cuda/embedding_plan.h"

#include <algorithm>

namespace ablate::cuda {

EmbeddingPlan BuildEmbeddingPlan(const int32_t* idx, int64_t n, int32_t segment_rows) {
  const int32_t rows = std::max(segment_rows, kEmbeddingSegmentRows);
  EmbeddingPlan plan;
  plan.seg_offsets.push_back(0);
  plan.multi_slots.push_back(0);
  if (n == 0) {
    plan.offsets.push_back(0);
    return plan;
  }
  int32_t max_id = *std::max_element(idx, idx + n);
  std::vector<int32_t> count(size_t(max_id) + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++count[size_t(idx[i])];
  std::vector<int32_t> start(count.size(), 0);  // first slot of each id in positions
  int32_t next = 0, slots = 0;
  for (size_t id = 0; id < count.size(); ++id) {
    if (count[id] == 0) continue;
    plan.ids.push_back(int32_t(id));
    plan.offsets.push_back(next);
    start[id] = next;
    bool multi = count[id] > rows;
    for (int32_t at = next, end = next + count[id]; at < end; at += std::min(rows, end - at)) {
      plan.seg_row.push_back(int32_t(id));
      plan.seg_slot.push_back(multi ? slots++ : -1);
      plan.seg_offsets.push_back(at + std::min(rows, end - at));
    }
    if (multi) {
      plan.multi_row.push_back(int32_t(id));
      plan.multi_slots.push_back(slots);
    }
    next += count[id];
  }
  plan.offsets.push_back(next);
  plan.positions.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) plan.positions[size_t(start[size_t(idx[i])]++)] = int32_t(i);
  return plan;
}

// An id of k > R rows has ceil(k / R) < 2k / R segments, so all of them together fewer than
// 2N / R.
int64_t EmbeddingPartialRows(int64_t n) { return 2 * n / kEmbeddingSegmentRows + 1; }

// positions N, seg_offsets S + 1, seg_row and seg_slot S each (S <= N: a segment has a row),
// multi_row M and multi_slots M + 1 (M <= N / (R + 1): such an id has more than R rows).
int64_t PackedEmbeddingPlanInts(int64_t n) {
  return 4 * n + 2 * (n / (kEmbeddingSegmentRows + 1)) + 2;
}

int64_t PackEmbeddingPlan(const EmbeddingPlan& plan, int32_t* out) {
  int32_t* at = out;
  for (const std::vector<int32_t>* part : {&plan.positions, &plan.seg_offsets, &plan.seg_row,
                                           &plan.seg_slot, &plan.multi_row, &plan.multi_slots}) {
    at = std::copy(part->begin(), part->end(), at);
  }
  return at - out;
}

DeviceEmbeddingPlan DeviceEmbeddingPlanAt(const int32_t* packed, const EmbeddingPlan& plan) {
  DeviceEmbeddingPlan d;
  d.segments = int64_t(plan.seg_row.size());
  d.multi = int64_t(plan.multi_row.size());
  d.partial_rows = plan.multi_slots.back();
  d.positions = packed;
  d.seg_offsets = d.positions + plan.positions.size();
  d.seg_row = d.seg_offsets + plan.seg_offsets.size();
  d.seg_slot = d.seg_row + plan.seg_row.size();
  d.multi_row = d.seg_slot + plan.seg_slot.size();
  d.multi_slots = d.multi_row + plan.multi_row.size();
  return d;
}

}  // namespace ablate::cuda
