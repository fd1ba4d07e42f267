// BuildEmbeddingPlan: a counting sort of row indices by id (O(N + max id)), stable, so rows of
// one id stay in increasing position order and the device sums them in that order.
#include <algorithm>

#include "trainer/cuda/embedding.h"

namespace ablate::cuda {

EmbeddingPlan BuildEmbeddingPlan(const int32_t* idx, int64_t n) {
  EmbeddingPlan plan;
  if (n == 0) {
    plan.offsets.push_back(0);
    return plan;
  }
  int32_t max_id = *std::max_element(idx, idx + n);
  std::vector<int32_t> count(size_t(max_id) + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++count[size_t(idx[i])];
  std::vector<int32_t> start(count.size(), 0);  // first slot of each id in positions
  int32_t next = 0;
  for (size_t id = 0; id < count.size(); ++id) {
    if (count[id] == 0) continue;
    plan.ids.push_back(int32_t(id));
    plan.offsets.push_back(next);
    start[id] = next;
    next += count[id];
  }
  plan.offsets.push_back(next);
  plan.positions.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) plan.positions[size_t(start[size_t(idx[i])]++)] = int32_t(i);
  return plan;
}

}  // namespace ablate::cuda
