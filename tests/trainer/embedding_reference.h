// Test helpers for the CUDA embedding backward (trainer/cuda/embedding.h), shared by the GPU op
// test and the CPU emulator's test: text-like ids, and the backward computed on the host in the
// order the plan fixes, float by float, so that a kernel's result can be compared bit for bit.
#ifndef ABLATE_TESTS_TRAINER_EMBEDDING_REFERENCE_H_
#define ABLATE_TESTS_TRAINER_EMBEDDING_REFERENCE_H_

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "trainer/cuda/embedding_plan.h"

namespace ablate::testing {

// n ids below `vocab`, rank r drawn with weight 1 / (r + 2.7) (text's Zipf-like shape: the most
// frequent id takes ~4 % of the rows at GPT-2's vocabulary), ranks shuffled over the ids.
inline std::vector<int32_t> ZipfLikeIds(int64_t n, int32_t vocab, uint32_t seed) {
  std::vector<double> w(static_cast<size_t>(vocab));
  for (size_t r = 0; r < w.size(); ++r) w[r] = 1.0 / (double(r) + 2.7);
  std::discrete_distribution<int32_t> rank(w.begin(), w.end());
  std::vector<int32_t> id_of(static_cast<size_t>(vocab));
  std::iota(id_of.begin(), id_of.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(id_of.begin(), id_of.end(), rng);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = id_of[size_t(rank(rng))];
  return ids;
}

// dtable[id] += Σ dout[rows of id] as embedding.h says the device sums: each segment from 0 in
// position order, an id's segment sums added in segment order, the total added to the table.
inline void EmbeddingBackwardInPlanOrder(std::vector<float>& dtable, const std::vector<float>& dout,
                                         const cuda::EmbeddingPlan& plan, int64_t c) {
  size_t segments = plan.seg_row.size();
  for (size_t s = 0; s < segments;) {
    size_t end = s + 1;
    while (end < segments && plan.seg_row[end] == plan.seg_row[s]) ++end;
    for (int64_t j = 0; j < c; ++j) {
      float total = 0.f;
      for (size_t k = s; k < end; ++k) {
        float sum = 0.f;
        for (int32_t r = plan.seg_offsets[k]; r < plan.seg_offsets[k + 1]; ++r) {
          sum += dout[size_t(int64_t(plan.positions[size_t(r)]) * c + j)];
        }
        total = k == s ? sum : total + sum;
      }
      dtable[size_t(int64_t(plan.seg_row[s]) * c + j)] += total;
    }
    s = end;
  }
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_TRAINER_EMBEDDING_REFERENCE_H_
