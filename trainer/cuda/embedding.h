// Row gathers from an embedding table (token embedding, value embeddings) and their backward.
// The backward is deterministic: instead of scatter-adding with atomics, rows are grouped by
// token id on the host (BuildEmbeddingPlan) and each (id, channel) sums its rows in position
// order. CPU twin: trainer/cpu/embedding.h.
#ifndef ABLATE_TRAINER_CUDA_EMBEDDING_H_
#define ABLATE_TRAINER_CUDA_EMBEDDING_H_

#include <cstdint>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"

namespace ablate::cuda {

// The rows of a batch grouped by id (host side).
struct EmbeddingPlan {
  std::vector<int32_t> ids;        // (U) distinct ids, increasing
  std::vector<int32_t> offsets;    // (U + 1) rows of ids[u] are positions[offsets[u], offsets[u+1])
  std::vector<int32_t> positions;  // (N) row indices, increasing within each id
};

// Groups the n rows of idx by id (a counting sort). REQUIRES: 0 <= idx[i].
EmbeddingPlan BuildEmbeddingPlan(const int32_t* idx, int64_t n);

// The same plan in device memory (pointers owned by the caller).
struct DeviceEmbeddingPlan {
  const int32_t* ids = nullptr;
  const int32_t* offsets = nullptr;
  const int32_t* positions = nullptr;
  int64_t unique = 0;  // U
};

// out (N, C) = table[idx[i]] for i < N; table (Ve, C), fp32. REQUIRES: 0 <= idx < Ve.
Status embedding_forward(CudaContext& ctx, float* out, const float* table, const int32_t* idx,
                         int64_t n, int64_t c);

// dtable[id] += Σ dout[rows of id] for every id of the plan (rows summed in position order).
Status embedding_backward(CudaContext& ctx, float* dtable, const float* dout,
                          const DeviceEmbeddingPlan& plan, int64_t c);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_EMBEDDING_H_
