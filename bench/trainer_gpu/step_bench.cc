// The step half of trainer_gpu_bench (step_bench.h): whole training steps through the trainer's
// Engine, their model FLOPs and MFU, and one micro-step's phases timed apart.
#include "bench/trainer_gpu/step_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "trainer/collectives/in_process_communicator.h"
#include "trainer/cpu/attention.h"
#include "trainer/cuda/gpt.h"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/optimizer.h"
#include "trainer/model/param_init.h"
#include "trainer/model/window_schedule.h"
#include "trainer/train/engine.h"
#include "trainer/train/run_plan.h"

namespace ablate::cuda::gpu_bench {
namespace {

// Mean number of keys a query sees in layer i (masks of the run), per layer.
std::vector<double> MeanKeys(const ModelConfig& m, const std::vector<int32_t>& tokens, int64_t b,
                             int64_t t, const std::vector<int64_t>& windows) {
  std::vector<double> out(size_t(m.n_layer), 0.0);
  std::vector<int32_t> lo(size_t(b * t));
  for (int64_t i = 0; i < m.n_layer; ++i) {
    if (!m.HasAttention(i)) continue;
    cpu::AttentionMask mask{m.doc_masking, m.bos_token, windows[i], m.window.block_tokens};
    cpu::attention_key_start(lo.data(), tokens.data(), t + 1, b, t, mask);
    double sum = 0;
    for (int64_t r = 0; r < b * t; ++r) sum += double(r % t - lo[r] + 1);
    out[i] = sum / double(b * t);
  }
  return out;
}

// Model FLOPs of one training step over `tokens` tokens.
double StepFlops(const ModelConfig& m, const std::vector<double>& mean_keys, double tokens) {
  double c = double(m.model_dim), f = double(m.hidden_dim());
  double weights = double(m.vocab_size) * c;  // the head
  double attention = 0;
  for (int64_t i = 0; i < m.n_layer; ++i) {
    weights += 2 * c * f;
    if (!m.HasAttention(i)) continue;
    weights += 4 * c * c;
    // q·k and p·v: 2 products of 2 FLOPs per key and channel forward, twice that backward.
    attention += 12.0 * mean_keys[i] * c;
  }
  return 6.0 * weights * tokens + attention * tokens;
}

// What TimeSteps measured.
struct StepTimes {
  std::vector<double> waited;     // ms per step, each waited for before the next was queued
  std::vector<double> device_ms;  // the trainer's own step_ms over the pipelined steps
  double pipelined = 0;           // ms per step with step k + 1 queued before k is collected
  double model_gb = 0;
};

// Whole training steps as ablate-train runs them on one GPU, through its Engine: first each step
// waited for before the next is queued (the baseline: what the loop did before it queued ahead),
// then the trainer's loop, which queues step k + 1 before it collects step k. Wall clock over
// the steps; the pipelined figure is what a run's training time is made of.
StepTimes TimeSteps(const Options& o, const StepSetup& s,
                    const std::vector<std::vector<int32_t>>& micro,
                    const std::vector<int64_t>& windows) {
  StepTimes out;
  RunPlan plan{s.m, s.optim};
  plan.backend = Backend::kCuda;
  plan.devices = {o.device};
  plan.micro_batch = s.b;
  plan.num_iterations = s.iters;
  plan.attention = o.attention;
  InProcessGroup group(1);
  InProcessCommunicator comm(&group, 0);
  std::unique_ptr<Engine> engine = Take(MakeEngine(plan, comm), "engine");
  Check(engine->Init(1), "parameters");
  auto queue = [&](int64_t k) {
    Check(engine->BeginStep(k), "begin step");
    Check(engine->ZeroGrads(), "zero");
    for (const std::vector<int32_t>& tok : micro) {
      Check(engine->Accumulate(tok.data(), windows, s.accum, Pass::kTrain), "forward/backward");
    }
    Check(engine->Step(k), "optimizer step");
    Check(engine->EndStep(k, false, false, false), "end step");
  };
  auto collect = [&](int64_t k) {
    StepReport r = Take(engine->CollectStep(k), "collect step");
    out.device_ms.push_back(r.step_ms);
  };
  int64_t k = 0;
  for (; k < 2; ++k) {  // warm-up: cuBLASLt heuristics, non-zero head
    queue(k);
    collect(k);
  }
  for (int i = 0; i < o.steps; ++i, ++k) {
    Clock::time_point t0 = Clock::now();
    queue(k);
    collect(k);
    out.waited.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  out.device_ms.clear();
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < o.steps; ++i, ++k) {
    queue(k);
    if (i > 0) collect(k - 1);
  }
  collect(k - 1);
  out.pipelined = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / o.steps;
  out.model_gb = double(engine->Memory() ? engine->Memory()->model_bytes : 0) / 1e9;
  std::sort(out.waited.begin(), out.waited.end());
  std::sort(out.device_ms.begin(), out.device_ms.end());
  return out;
}

// One micro-step's forward, forward+backward and an optimizer step, each timed on the device;
// returns the forward+backward's ms.
double PrintPhases(CudaContext& ctx, const Options& o, const StepSetup& s,
                   const std::vector<int32_t>& tokens, const std::vector<int64_t>& windows) {
  std::unique_ptr<Gpt> gpt = Take(Gpt::Create(ctx, s.m, s.b, s.t), "model");
  gpt->set_attention(o.attention);
  Optimizer opt(s.optim, gpt->device_layout());
  Check(opt.Init(ctx), "optimizer");
  std::vector<float> host(size_t(gpt->layout().total()));
  InitParams(s.m, gpt->layout(), 1, host.data());
  Check(gpt->SetParams(host.data()), "parameters");
  double fwd = DeviceMs(ctx, 1, 3, [&] { return gpt->Forward(tokens.data(), windows, 1); });
  double fwd_bwd =
      DeviceMs(ctx, 1, 3, [&] { return gpt->ForwardBackward(tokens.data(), windows, 1); });
  double optim =
      DeviceMs(ctx, 1, 3, [&] { return opt.Step(ctx, gpt->params(), gpt->grads(), s.iters / 2); });
  std::printf("micro-step forward %.2f ms, forward+backward %.2f ms; optimizer step %.2f ms\n", fwd,
              fwd_bwd, optim);
  return fwd_bwd;
}

}  // namespace

double GemmCeilingTflops(CudaContext& ctx) {
  int64_t n = 8192;
  DeviceBuffer<bf16> a = Buffer<bf16>(n * n, "A"), b = Buffer<bf16>(n * n, "B"),
                     d = Buffer<bf16>(n * n, "D");
  FillRandom(ctx, a, 1);
  FillRandom(ctx, b, 2);
  double ms = DeviceMs(ctx, 3, 10, [&] {
    return Gemm<bf16>(ctx, Trans::kNo, Trans::kYes, n, n, n, 1.f, a.get(), n, b.get(), n, 0.f,
                      nullptr, d.get(), n);
  });
  return 2.0 * double(n) * n * n / (ms * 1e9);
}

double BenchStep(CudaContext& ctx, const Options& o, double ceiling) {
  StepSetup s = Setup(o);
  std::vector<std::vector<int32_t>> micro;
  for (int64_t i = 0; i < s.accum; ++i) {
    micro.push_back(Tokens(s.b * (s.t + 1), s.m.embed_vocab_size, s.m.bos_token, uint32_t(7 + i)));
  }
  std::vector<int64_t> windows = LayerWindowBlocks(s.m, s.iters / 2, s.iters);
  StepTimes t = TimeSteps(o, s, micro, windows);
  double step_ms = t.pipelined;
  double flops = StepFlops(s.m, MeanKeys(s.m, micro[0], s.b, s.t, windows), double(s.batch_tokens));
  double tflops = flops / (step_ms * 1e9);
  std::printf("%s %s: B=%lld T=%lld, %lld micro-steps, attention %s, %.1f GB on the device\n",
              o.preset.c_str(), o.scale.c_str(), (long long)s.b, (long long)s.t, (long long)s.accum,
              AttentionImplName(o.attention), t.model_gb);
  std::printf(
      "step %.1f ms (trainer loop, %d steps queued ahead; device step_ms median %.1f)  %.0f tok/s"
      "  %.1f TFLOP/s  MFU %.1f%% of %.0f TF peak, %.1f%% of the measured GEMM rate\n",
      step_ms, o.steps, t.device_ms[t.device_ms.size() / 2],
      double(s.batch_tokens) / (step_ms / 1e3), tflops, 100 * tflops / o.peak_tflops, o.peak_tflops,
      100 * tflops / ceiling);
  double waited_ms = t.waited[t.waited.size() / 2];
  std::printf("baseline, each step waited for: %.1f ms (median of %d)  ratio loop/baseline %.3f\n",
              waited_ms, o.steps, step_ms / waited_ms);
  return PrintPhases(ctx, o, s, micro[0], windows);
}

}  // namespace ablate::cuda::gpu_bench
