// GPU trainer throughput on one GPU (bench/trainer_gpu/NOTES.md): a preset's whole training step
// at full scale (default r20-sub3min: one 65,536-token sequence per micro-step, 8 micro-steps
// per 524,288-token step) in ms/step, tokens/s and MFU, next to the bf16 GEMM rate cuBLASLt
// reaches on this GPU in the same run; then per-op timings at the preset's shape: every op one
// micro-step launches, each with its count per micro-step and ms x count, attention's for both
// kernel sets (tiled and mma) with their outputs compared, and the sum against the micro-step's
// measured forward+backward when the step ran in the same run.
//   trainer_gpu_bench [--preset P] [--scale full|small|tiny] [--steps N] [--peak-tflops F]
//                     [--device I] [--skip-ops] [--skip-step]
//                     [--attention auto|tiled|mma (the step's attention kernels; default auto)]
//                     [--dump-config F (canonical config to F, exit)]
// Exit 1 when any timed run failed (a per-op row that failed says why on its row; the table
// goes on), 2 for a bad option.
// MFU counts the model's FLOPs (6 per weight per token, plus causal attention over the keys each
// query actually sees under the run's masks), not the recomputation the kernels do.
//
// The parts: bench_common.h (options, timing, buffers, the step's shape), step_bench.h (the GEMM
// ceiling and the step table), op_bench.h (the per-op table: op_table.h, op_rows.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "bench/trainer_gpu/bench_common.h"
#include "bench/trainer_gpu/op_bench.h"
#include "bench/trainer_gpu/step_bench.h"
#include "trainer/config/attention_impl.h"
#include "trainer/config/presets.h"
#include "trainer/cuda/cuda_context.h"

namespace ablate::cuda::gpu_bench {
namespace {

// --attention's value: auto, tiled or mma (kWarp is far too slow at a run's shape).
AttentionImpl ParseAttention(const std::string& name) {
  std::optional<AttentionImpl> impl = ParseAttentionImpl(name);
  if (!impl || *impl == AttentionImpl::kWarp) {
    std::fprintf(stderr, "trainer_gpu_bench: --attention must be auto, tiled or mma, not '%s'\n",
                 name.c_str());
    std::exit(2);
  }
  return *impl;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "trainer_gpu_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--preset")
      o.preset = next();
    else if (a == "--scale")
      o.scale = next();
    else if (a == "--steps")
      o.steps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--peak-tflops")
      o.peak_tflops = std::atof(next().c_str());
    else if (a == "--device")
      o.device = std::atoi(next().c_str());
    else if (a == "--skip-ops")
      o.ops = false;
    else if (a == "--skip-step")
      o.step = false;
    else if (a == "--dump-config")
      o.dump_config = next();
    else if (a == "--attention")
      o.attention = ParseAttention(next());
    else {
      std::fprintf(stderr, "trainer_gpu_bench: unknown option %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace
}  // namespace ablate::cuda::gpu_bench

int main(int argc, char** argv) {
  using namespace ablate::cuda;
  using namespace ablate::cuda::gpu_bench;
  // Line-buffered even into a pipe (gpu_session.sh tees it): a run cut at its time cap keeps
  // the rows it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o = Parse(argc, argv);
  if (!o.dump_config.empty()) {  // for the PyTorch side of the comparison (torch_step_bench.py)
    nlohmann::json c =
        Take(ablate::PresetConfig(o.preset, Take(ablate::ParseScale(o.scale), "scale")), "preset");
    std::ofstream(o.dump_config) << c.dump(2) << "\n";
    return 0;
  }
  std::unique_ptr<CudaContext> ctx = Take(CudaContext::Create(o.device), "device");
  const DeviceInfo& d = ctx->device();
  std::printf("%s (sm_%d%d, %d SMs, %.1f GB)\n", d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count,
              double(d.total_memory) / 1e9);
  double ceiling = GemmCeilingTflops(*ctx);
  std::printf("cuBLASLt bf16 8192^3: %.1f TFLOP/s\n", ceiling);
  std::optional<double> fwd_bwd;
  if (o.step) fwd_bwd = BenchStep(*ctx, o, ceiling);
  int failed = o.ops ? BenchOps(*ctx, o, fwd_bwd) : 0;
  if (failed > 0) {
    std::fprintf(stderr, "trainer_gpu_bench: %d per-op row(s) failed (above)\n", failed);
    return 1;
  }
  return 0;
}
