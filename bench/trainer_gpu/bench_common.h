// What every part of trainer_gpu_bench shares: its options, the one-shot failure handling (Check,
// Take), device timing, random device buffers, a micro-batch's tokens and the preset's step shape.
// A one-shot binary's helpers: a failure that Check or Take meets ends the process with exit 1.
#ifndef ABLATE_BENCH_TRAINER_GPU_BENCH_COMMON_H_
#define ABLATE_BENCH_TRAINER_GPU_BENCH_COMMON_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "trainer/config/attention_impl.h"
#include "trainer/config/result.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/dtype.h"
#include "trainer/model/model_config.h"
#include "trainer/optim/optimizer.h"

namespace ablate::cuda::gpu_bench {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string preset = "r20-sub3min";
  std::string scale = "full";
  int steps = 5;
  double peak_tflops = 989;  // H100 SXM dense bf16, datasheet
  int device = 0;
  bool ops = true;
  bool step = true;  // --skip-step: only the GEMM ceiling and the per-op table
  AttentionImpl attention = AttentionImpl::kAuto;  // the step's (the per-op table times both)
  std::string dump_config;  // --dump-config F: write the canonical config and exit
};

// Returns when `s` is ok; else prints "trainer_gpu_bench: <what>: <message>" to stderr and exits 1.
void Check(const Status& s, const char* what);

// r's value; a failure ends the bench as Check does.
template <class T>
T Take(Result<T> r, const char* what) {
  if (!r.ok()) Check(r.status(), what);
  return std::move(r).value();
}

// Median device milliseconds of `fn` over `reps` runs after `warm` runs, each timed between two
// events on ctx's stream; the first failure's Error instead when one fails.
Result<double> TryDeviceMs(CudaContext& ctx, int warm, int reps, const std::function<Status()>& fn);

// As TryDeviceMs; a failure ends the bench.
double DeviceMs(CudaContext& ctx, int warm, int reps, const std::function<Status()>& fn);

// An uninitialised device buffer of n values; a failed allocation ends the bench.
template <class T>
DeviceBuffer<T> Buffer(int64_t n, const char* what) {
  DeviceBuffer<T> b;
  Check(b.Allocate(n, what), what);
  return b;
}

// Fills a bf16 or float buffer with uniform values in [-1, 1) (never timed on zeros).
template <class T>
void FillRandom(CudaContext& ctx, DeviceBuffer<T>& b, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<T> host(size_t(b.size()));
  for (T& x : host) x = T(u(rng));
  Check(ctx.ToDevice(b.get(), host.data(), b.bytes()), "upload");
}

// Queues a copy of n values from src to dst, both on the device, on ctx's stream.
template <class T>
Status CopyOnDevice(CudaContext& ctx, T* dst, const T* src, int64_t n) {
  ABLATE_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, ctx.stream()));
  return {};
}

// n values uniform in [-1, 1): a random block of up to 2^20 values, repeated by device copies
// (hundreds of millions of host draws would cost seconds of the ops phase, and no row's time
// depends on the values).
template <class T>
DeviceBuffer<T> Filled(CudaContext& ctx, int64_t n, uint32_t seed, const char* what) {
  DeviceBuffer<T> b = Buffer<T>(n, what);
  int64_t block = std::min<int64_t>(n, int64_t(1) << 20);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<T> host(static_cast<size_t>(block));
  for (T& x : host) x = T(u(rng));
  Check(ctx.ToDevice(b.get(), host.data(), block * int64_t(sizeof(T))), what);
  for (int64_t done = block; done < n; done *= 2) {
    Check(CopyOnDevice(ctx, b.get() + done, b.get(), std::min(done, n - done)), what);
  }
  return b;
}

// Tokens of one micro-batch: ids below `vocab`, a document boundary every ~1000 tokens.
std::vector<int32_t> Tokens(int64_t count, int64_t vocab, int32_t bos, uint32_t seed);

// The preset's step at --scale: B sequences of T tokens per micro-step, `accum` micro-steps per
// step of `batch_tokens` tokens, `iters` steps in a run.
struct StepSetup {
  ModelConfig m;
  OptimConfig optim;
  int64_t b = 0, t = 0, accum = 0, batch_tokens = 0, iters = 0;
};

// o's preset and scale; an unknown one ends the bench.
StepSetup Setup(const Options& o);

// The distinct windows of the attention layers, in layer order (Gpt::Stage stages one key-start
// row each); `windows` holds one per layer.
std::vector<int64_t> AttentionWindows(const ModelConfig& m, const std::vector<int64_t>& windows);

}  // namespace ablate::cuda::gpu_bench

#endif  // ABLATE_BENCH_TRAINER_GPU_BENCH_COMMON_H_
