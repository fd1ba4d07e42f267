// Row gathers from an embedding table (token embedding, value embeddings) and their backward.
// The backward is deterministic: instead of scatter-adding with atomics, rows are grouped by
// token id on the host (BuildEmbeddingPlan) and summed in a fixed order. Text ids are Zipf-like
// (a few ids take several percent of a batch's rows), so an id's rows are cut into segments of
// at most kEmbeddingSegmentRows: every segment is summed by its own blocks, and an id with more
// than one segment has its segments' sums added in segment order by a second pass. The order
// is a function of the ids alone, so the bits are the same on every run and every GPU.
// CPU twin: trainer/cpu/embedding.h.
#ifndef ABLATE_TRAINER_CUDA_EMBEDDING_H_
#define ABLATE_TRAINER_CUDA_EMBEDDING_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/embedding_plan.h"

namespace ablate::cuda {

// out (N, C) = table[idx[i]] for i < N; table (Ve, C), fp32. REQUIRES: 0 <= idx < Ve.
Status embedding_forward(CudaContext& ctx, float* out, const float* table, const int32_t* idx,
                         int64_t n, int64_t c);

// dtable[id] += Σ dout[rows of id] for every id of the plan: each segment's rows summed in
// position order, an id's segment sums added in segment order. `partials` holds
// `partial_capacity` rows of C floats (EmbeddingPartialRows(N) is always enough); a plan that
// needs more is refused.
Status embedding_backward(CudaContext& ctx, float* dtable, const float* dout,
                          const DeviceEmbeddingPlan& plan, int64_t c, float* partials,
                          int64_t partial_capacity);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_EMBEDDING_H_
