// trainer_gpu_bench's shared helpers (bench_common.h).
#include "bench/trainer_gpu/bench_common.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "trainer/config/presets.h"

namespace ablate::cuda::gpu_bench {
namespace {

// Device milliseconds of one run of `fn`, between two events on ctx's stream.
Status TimeOnce(CudaContext& ctx, const std::function<Status()>& fn, float* ms) {
  cudaEvent_t start = nullptr, stop = nullptr;
  ABLATE_CUDA_CHECK(cudaEventCreate(&start));
  ABLATE_CUDA_CHECK(cudaEventCreate(&stop));
  ABLATE_CUDA_CHECK(cudaEventRecord(start, ctx.stream()));
  ABLATE_RETURN_IF_ERROR(fn());
  ABLATE_CUDA_CHECK(cudaEventRecord(stop, ctx.stream()));
  ABLATE_CUDA_CHECK(cudaEventSynchronize(stop));
  ABLATE_CUDA_CHECK(cudaEventElapsedTime(ms, start, stop));
  ABLATE_CUDA_CHECK(cudaEventDestroy(start));
  ABLATE_CUDA_CHECK(cudaEventDestroy(stop));
  return {};
}

}  // namespace

// A one-shot binary: a failure ends it, saying what failed.
void Check(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "trainer_gpu_bench: %s: %s\n", what, s.message().c_str());
  std::exit(1);
}

Result<double> TryDeviceMs(CudaContext& ctx, int warm, int reps,
                           const std::function<Status()>& fn) {
  for (int i = 0; i < warm; ++i) {
    Status s = fn();
    if (s.ok()) s = ctx.Synchronize();
    if (!s.ok()) return Error{"warm-up: " + s.message(), ""};
  }
  std::vector<float> ms(static_cast<size_t>(reps));
  for (float& m : ms) {
    Status s = TimeOnce(ctx, fn, &m);
    if (!s.ok()) return Error{"timed run: " + s.message(), ""};
  }
  std::sort(ms.begin(), ms.end());
  return double(ms[ms.size() / 2]);
}

double DeviceMs(CudaContext& ctx, int warm, int reps, const std::function<Status()>& fn) {
  return Take(TryDeviceMs(ctx, warm, reps, fn), "timed op");
}

std::vector<int32_t> Tokens(int64_t count, int64_t vocab, int32_t bos, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> tok(static_cast<size_t>(count));
  for (int32_t& x : tok) x = rng() % 1000 == 0 ? bos : int32_t(rng() % uint32_t(vocab));
  return tok;
}

StepSetup Setup(const Options& o) {
  nlohmann::json c = Take(PresetConfig(o.preset, Take(ParseScale(o.scale), "scale")), "preset");
  StepSetup s{Take(ModelConfig::FromCanonical(c), "model"),
              Take(OptimConfig::FromCanonical(c), "optimizer")};
  s.t = s.m.seq_len;
  s.b = c.at("device_batch_tokens").get<int64_t>() / s.t;
  s.batch_tokens = c.at("batch_tokens").get<int64_t>();
  s.accum = s.batch_tokens / (s.b * s.t);
  s.iters = c.at("num_iterations").get<int64_t>();
  return s;
}

std::vector<int64_t> AttentionWindows(const ModelConfig& m, const std::vector<int64_t>& windows) {
  std::vector<int64_t> distinct;
  for (int64_t i = 0; i < m.n_layer; ++i) {
    int64_t w = windows[size_t(i)];
    if (!m.HasAttention(i)) continue;
    if (std::find(distinct.begin(), distinct.end(), w) == distinct.end()) distinct.push_back(w);
  }
  return distinct;
}

}  // namespace ablate::cuda::gpu_bench
