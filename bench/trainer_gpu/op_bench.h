// The per-op half of trainer_gpu_bench: every op one micro-step launches, timed on its own at the
// preset's shapes, as a table on stdout (op_table.h), then the table's sum against the micro-step.
#ifndef ABLATE_BENCH_TRAINER_GPU_OP_BENCH_H_
#define ABLATE_BENCH_TRAINER_GPU_OP_BENCH_H_

#include <optional>

#include "bench/trainer_gpu/bench_common.h"
#include "trainer/cuda/cuda_context.h"

namespace ablate::cuda::gpu_bench {

// The per-op table at o's preset and scale: each op with its count per micro-step and ms x count,
// attention for both kernel sets (the sum counts mma's when o.attention is kMma, else tiled's)
// with their outputs compared, then the sum against `measured` (the step's forward+backward ms,
// when the step ran in this run). Returns the number of rows and comparisons that failed; each
// says why on its line. A failed allocation or upload ends the bench (exit 1).
int BenchOps(CudaContext& ctx, const Options& o, std::optional<double> measured);

}  // namespace ablate::cuda::gpu_bench

#endif  // ABLATE_BENCH_TRAINER_GPU_OP_BENCH_H_
