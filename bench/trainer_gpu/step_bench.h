// The step half of trainer_gpu_bench: the GPU's bf16 GEMM ceiling and a preset's whole training
// step, timed as ablate-train runs it. Both print their lines to stdout; any failure ends the bench
// with exit 1 (bench_common.h's Check).
#ifndef ABLATE_BENCH_TRAINER_GPU_STEP_BENCH_H_
#define ABLATE_BENCH_TRAINER_GPU_STEP_BENCH_H_

#include "bench/trainer_gpu/bench_common.h"
#include "trainer/cuda/cuda_context.h"

namespace ablate::cuda::gpu_bench {

// cuBLASLt's bf16 rate on an 8192³ product, in TFLOP/s: this GPU's matrix ceiling, for the MFU
// context.
double GemmCeilingTflops(CudaContext& ctx);

// The step table: whole steps through the Engine (the trainer's loop, which queues step k + 1
// before it collects step k, against each step waited for), their tokens/s and MFU against
// o.peak_tflops and `ceiling` (TFLOP/s), then one micro-step's forward, forward+backward and
// optimizer step timed apart. Returns that micro-step's forward+backward ms.
double BenchStep(CudaContext& ctx, const Options& o, double ceiling);

}  // namespace ablate::cuda::gpu_bench

#endif  // ABLATE_BENCH_TRAINER_GPU_STEP_BENCH_H_
