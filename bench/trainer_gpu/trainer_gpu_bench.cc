// GPU trainer throughput on one GPU (bench/trainer_gpu/NOTES.md): a preset's whole training step
// at full scale (default r20-sub3min: one 65,536-token sequence per micro-step, 8 micro-steps
// per 524,288-token step) in ms/step, tokens/s and MFU, next to the bf16 GEMM rate cuBLASLt
// reaches on this GPU in the same run; then per-op timings at the preset's shape, attention's
// for both kernel sets (tiled and mma) with their outputs compared.
//   trainer_gpu_bench [--preset P] [--scale full|small|tiny] [--steps N] [--peak-tflops F]
//                     [--device I] [--skip-ops] [--skip-step]
//                     [--attention auto|tiled|mma (the step's attention kernels; default auto)]
//                     [--dump-config F (canonical config to F, exit)]
// Exit 1 when any timed run failed (a per-op row that failed says why on its row; the table
// goes on), 2 for a bad option.
// MFU counts the model's FLOPs (6 per weight per token, plus causal attention over the keys each
// query actually sees under the run's masks), not the recomputation the kernels do.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "trainer/config/attention_impl.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"
#include "trainer/cpu/attention.h"
#include "trainer/cuda/attention.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/gpt.h"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/mlp_act.h"
#include "trainer/cuda/optimizer.h"
#include "trainer/cuda/rmsnorm.h"
#include "trainer/cuda/softcap_cross_entropy.h"
#include "trainer/collectives/in_process_communicator.h"
#include "trainer/model/param_init.h"
#include "trainer/model/window_schedule.h"
#include "trainer/train/engine.h"
#include "trainer/train/run_plan.h"

namespace ablate::cuda {
namespace {

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

// A one-shot binary: a failure ends it, saying what failed.
void Check(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "trainer_gpu_bench: %s: %s\n", what, s.message().c_str());
  std::exit(1);
}

template <class T>
T Take(Result<T> r, const char* what) {
  if (!r.ok()) Check(r.status(), what);
  return std::move(r).value();
}

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

// Median device milliseconds of `fn` over `reps` runs after `warm` runs; the first failure's
// Error instead when one fails.
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

// As TryDeviceMs; a failure ends the bench.
double DeviceMs(CudaContext& ctx, int warm, int reps, const std::function<Status()>& fn) {
  return Take(TryDeviceMs(ctx, warm, reps, fn), "timed op");
}

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

// cuBLASLt's bf16 rate on an 8192³ product: this GPU's matrix ceiling, for the MFU context.
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

// Tokens of one micro-batch: ids below `vocab`, a document boundary every ~1000 tokens.
std::vector<int32_t> Tokens(int64_t count, int64_t vocab, int32_t bos, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> tok(static_cast<size_t>(count));
  for (int32_t& x : tok) x = rng() % 1000 == 0 ? bos : int32_t(rng() % uint32_t(vocab));
  return tok;
}

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

struct StepSetup {
  ModelConfig m;
  OptimConfig optim;
  int64_t b = 0, t = 0, accum = 0, batch_tokens = 0, iters = 0;
};

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

// One micro-step's forward, forward+backward and an optimizer step, each timed on the device.
void PrintPhases(CudaContext& ctx, const Options& o, const StepSetup& s,
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
}

// The step table: TimeSteps's figures against the FLOP count, then PrintPhases.
void BenchStep(CudaContext& ctx, const Options& o, double ceiling) {
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
      double(s.batch_tokens) / (step_ms / 1e3), tflops, 100 * tflops / o.peak_tflops,
      o.peak_tflops, 100 * tflops / ceiling);
  double waited_ms = t.waited[t.waited.size() / 2];
  std::printf("baseline, each step waited for: %.1f ms (median of %d)  ratio loop/baseline %.3f\n",
              waited_ms, o.steps, step_ms / waited_ms);
  PrintPhases(ctx, o, s, micro[0], windows);
}

// One row of the per-op table: time, and its rate in TFLOP/s or GB/s.
void Row(const std::string& name, double ms, double flops, double bytes) {
  if (flops > 0) {
    std::printf("  %-40s %9.3f ms  %7.1f TFLOP/s\n", name.c_str(), ms, flops / (ms * 1e9));
  } else {
    std::printf("  %-40s %9.3f ms  %7.1f GB/s\n", name.c_str(), ms, bytes / (ms * 1e6));
  }
}

// A row whose run may fail: the figure, or the error in its place. True when it ran.
bool TryRow(const std::string& name, const Result<double>& ms, double flops) {
  if (ms.ok()) {
    Row(name, *ms, flops, 0);
    return true;
  }
  std::printf("  %-40s FAILED: %s\n", name.c_str(), ms.error().message.c_str());
  return false;
}

void BenchGemms(CudaContext& ctx, int64_t n, int64_t c, int64_t f) {
  DeviceBuffer<bf16> x = Buffer<bf16>(n * f, "x"), w = Buffer<bf16>(3 * c * f, "w"),
                     y = Buffer<bf16>(n * f, "y");
  DeviceBuffer<float> acc = Buffer<float>(n * c, "acc"), dw = Buffer<float>(c * f, "dw");
  FillRandom(ctx, x, 3);
  FillRandom(ctx, w, 4);
  FillRandom(ctx, acc, 5);
  auto gemm_row = [&](const char* name, int64_t in, int64_t out, auto fn) {
    Row(name, DeviceMs(ctx, 2, 10, fn), 2.0 * n * in * out, 0);
  };
  gemm_row("qkv  x(N,C)·W(3C,C)ᵀ → bf16", c, 3 * c,
           [&] { return matmul_forward<bf16>(ctx, y.get(), x.get(), w.get(), n, c, 3 * c); });
  gemm_row("proj x(N,C)·W(C,C)ᵀ += fp32", c, c, [&] {
    return matmul_forward<float>(ctx, acc.get(), x.get(), w.get(), n, c, c, Output::kAdd);
  });
  gemm_row("fc   x(N,C)·W(F,C)ᵀ → bf16", c, f,
           [&] { return matmul_forward<bf16>(ctx, y.get(), x.get(), w.get(), n, c, f); });
  gemm_row("mlp  x(N,F)·W(C,F)ᵀ += fp32", f, c, [&] {
    return matmul_forward<float>(ctx, acc.get(), x.get(), w.get(), n, f, c, Output::kAdd);
  });
  Row("fc backward (dx bf16 + dW fp32)",
      DeviceMs(ctx, 2, 10,
               [&] {
                 return matmul_backward<bf16>(ctx, y.get(), dw.get(), x.get(), x.get(), w.get(), n,
                                              c, f, Output::kOverwrite);
               }),
      4.0 * n * c * f, 0);
}

// Attention's operands at the preset's shape: the inputs both kernel sets read, and the lo of the
// window being timed.
struct AttentionInputs {
  int64_t b = 0, t = 0, nh = 0, hd = 0;
  float scale = 0;
  DeviceBuffer<bf16> q, k, v, dout;  // (N, C)
  DeviceBuffer<float> rows;          // (B, NH, T) the backward's scratch
  DeviceBuffer<int32_t> lo;          // (B, T)
};

// What one kernel set wrote.
struct AttentionOutputs {
  DeviceBuffer<bf16> out;               // (N, C)
  DeviceBuffer<float> lse, dq, dk, dv;  // (B, NH, T), (N, C) each
};

AttentionOutputs MakeOutputs(int64_t n, int64_t c, int64_t nh, const char* impl) {
  std::string what = std::string(impl) + " attention output";
  return {Buffer<bf16>(n * c, what.c_str()), Buffer<float>(n * nh, what.c_str()),
          Buffer<float>(n * c, what.c_str()), Buffer<float>(n * c, what.c_str()),
          Buffer<float>(n * c, what.c_str())};
}

Status Forward(CudaContext& ctx, AttentionInputs& in, AttentionOutputs& o, AttentionImpl impl) {
  return attention_forward(ctx, o.out.get(), o.lse.get(), in.q.get(), in.k.get(), in.v.get(),
                           in.lo.get(), in.b, in.t, in.nh, in.hd, in.scale, impl);
}

// The backward of the forward whose out and lse `fwd` holds, gradients into `o`.
Status Backward(CudaContext& ctx, AttentionInputs& in, const AttentionOutputs& fwd,
                AttentionOutputs& o, AttentionImpl impl) {
  return attention_backward(ctx, o.dq.get(), o.dk.get(), o.dv.get(), in.dout.get(), in.q.get(),
                            in.k.get(), in.v.get(), fwd.out.get(), fwd.lse.get(), in.lo.get(),
                            in.rows.get(), in.b, in.t, in.nh, in.hd, in.scale, impl);
}

// Uploads lo (B, T) for `window` blocks under the run's masks; returns the number of (query, key)
// pairs it leaves visible.
double UploadWindow(CudaContext& ctx, const StepSetup& s, const std::vector<int32_t>& tokens,
                    int64_t window, AttentionInputs& in) {
  int64_t n = s.b * s.t;
  std::vector<int32_t> host_lo(static_cast<size_t>(n));
  cpu::AttentionMask mask{s.m.doc_masking, s.m.bos_token, window, s.m.window.block_tokens};
  cpu::attention_key_start(host_lo.data(), tokens.data(), s.t + 1, s.b, s.t, mask);
  Check(ctx.ToDevice(in.lo.get(), host_lo.data(), n * 4), "lo");
  double keys = 0;
  for (int64_t r = 0; r < n; ++r) keys += double(r % s.t - host_lo[r] + 1);
  return keys;
}

// Times one kernel set's forward and backward at the uploaded window, a row each; the number of
// rows that failed.
int TimeAttention(CudaContext& ctx, AttentionInputs& in, AttentionOutputs& o, AttentionImpl impl,
                  int64_t window, double keys) {
  double fwd_flops = 4.0 * keys * double(in.hd * in.nh);
  std::string tail =
      std::string(" ") + AttentionImplName(impl) + ", window " + std::to_string(window) + " blocks";
  bool fwd_ok =
      TryRow("attention fwd" + tail,
             TryDeviceMs(ctx, 2, 10, [&] { return Forward(ctx, in, o, impl); }), fwd_flops);
  if (!fwd_ok) {
    std::printf("  %-40s not run: the forward failed\n", ("attention bwd" + tail).c_str());
    return 2;
  }
  bool bwd_ok = TryRow("attention bwd" + tail,
                       TryDeviceMs(ctx, 2, 10, [&] { return Backward(ctx, in, o, o, impl); }),
                       2.0 * fwd_flops);
  return bwd_ok ? 0 : 1;
}

template <class T>
std::vector<float> HostFloats(CudaContext& ctx, const DeviceBuffer<T>& d) {
  std::vector<T> tmp(size_t(d.size()));
  Check(ctx.ToHost(tmp.data(), d.get(), d.bytes()), "download");
  std::vector<float> out(tmp.size());
  for (size_t i = 0; i < tmp.size(); ++i) out[i] = float(tmp[i]);
  return out;
}

// "name max|got − want| (max|want|)" for one tensor; NaN or inf in `got` shows as inf.
template <class T>
std::string Difference(CudaContext& ctx, const char* name, const DeviceBuffer<T>& got,
                       const DeviceBuffer<T>& want) {
  std::vector<float> g = HostFloats(ctx, got), w = HostFloats(ctx, want);
  double diff = 0, ref = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double d = std::isfinite(g[i]) ? std::abs(double(g[i]) - w[i]) : INFINITY;
    diff = std::max(diff, d);
    ref = std::max(ref, std::abs(double(w[i])));
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "  %s %.3g (%.3g)", name, diff, ref);
  return buf;
}

// kMma against kTiled at the uploaded window, once: both forwards on the same inputs, then both
// backwards from kTiled's out and lse (so the gradients compare the backward kernels alone).
Status CompareAttention(CudaContext& ctx, AttentionInputs& in, AttentionOutputs& tiled,
                        AttentionOutputs& mma, int64_t window) {
  ABLATE_RETURN_IF_ERROR(Forward(ctx, in, tiled, AttentionImpl::kTiled));
  ABLATE_RETURN_IF_ERROR(Forward(ctx, in, mma, AttentionImpl::kMma));
  ABLATE_RETURN_IF_ERROR(Backward(ctx, in, tiled, tiled, AttentionImpl::kTiled));
  ABLATE_RETURN_IF_ERROR(Backward(ctx, in, tiled, mma, AttentionImpl::kMma));
  ABLATE_RETURN_IF_ERROR(ctx.Synchronize());
  std::string line =
      Difference(ctx, "out", mma.out, tiled.out) + Difference(ctx, "lse", mma.lse, tiled.lse) +
      Difference(ctx, "dq", mma.dq, tiled.dq) + Difference(ctx, "dk", mma.dk, tiled.dk) +
      Difference(ctx, "dv", mma.dv, tiled.dv);
  std::printf("  mma vs tiled, window %lld blocks, max |mma - tiled| (max |tiled|):%s\n",
              (long long)window, line.c_str());
  return {};
}

// Attention's rows: each kernel set (tiled, then mma) at each distinct window of the run, then
// mma's outputs against tiled's. A kernel set that fails says so on its rows and the table goes
// on; returns the number of rows that failed (a failed comparison counts as one).
int BenchAttention(CudaContext& ctx, const StepSetup& s, const std::vector<int32_t>& tokens,
                   const std::vector<int64_t>& windows) {
  int64_t n = s.b * s.t, c = s.m.model_dim, nh = s.m.n_head;
  AttentionInputs in;
  in.b = s.b;
  in.t = s.t;
  in.nh = nh;
  in.hd = s.m.head_dim;
  in.scale = float(s.m.AttentionScale());
  in.q = Buffer<bf16>(n * c, "q");
  in.k = Buffer<bf16>(n * c, "k");
  in.v = Buffer<bf16>(n * c, "v");
  in.dout = Buffer<bf16>(n * c, "dout");
  in.rows = Buffer<float>(n * nh, "rows");
  in.lo = Buffer<int32_t>(n, "lo");
  uint32_t seed = 11;  // distinct inputs: q = k would make every query's own key dominate
  for (auto* b : {&in.q, &in.k, &in.v, &in.dout}) FillRandom(ctx, *b, seed++);
  AttentionOutputs tiled = MakeOutputs(n, c, nh, "tiled"), mma = MakeOutputs(n, c, nh, "mma");
  std::vector<int64_t> distinct;
  for (int64_t w : windows) {
    if (std::find(distinct.begin(), distinct.end(), w) == distinct.end()) distinct.push_back(w);
  }
  int failed = 0;
  std::vector<bool> mma_ok(distinct.size(), false);
  for (AttentionImpl impl : {AttentionImpl::kTiled, AttentionImpl::kMma}) {
    for (size_t i = 0; i < distinct.size(); ++i) {
      double keys = UploadWindow(ctx, s, tokens, distinct[i], in);
      AttentionOutputs& o = impl == AttentionImpl::kMma ? mma : tiled;
      int f = TimeAttention(ctx, in, o, impl, distinct[i], keys);
      failed += f;
      if (impl == AttentionImpl::kMma) mma_ok[i] = f == 0;
    }
  }
  for (size_t i = 0; i < distinct.size(); ++i) {
    if (!mma_ok[i]) {
      std::printf("  mma vs tiled, window %lld blocks: not compared (mma failed above)\n",
                  (long long)distinct[i]);
      continue;
    }
    UploadWindow(ctx, s, tokens, distinct[i], in);
    Status st = CompareAttention(ctx, in, tiled, mma, distinct[i]);
    if (!st.ok()) {
      std::printf("  mma vs tiled, window %lld blocks: FAILED: %s\n", (long long)distinct[i],
                  st.message().c_str());
      ++failed;
    }
  }
  return failed;
}

void BenchMemoryOps(CudaContext& ctx, const StepSetup& s) {
  int64_t n = s.b * s.t, c = s.m.model_dim, f = s.m.hidden_dim();
  DeviceBuffer<float> x = Buffer<float>(n * c, "x"), rstd = Buffer<float>(n, "rstd");
  DeviceBuffer<bf16> y = Buffer<bf16>(n * c, "y"), u = Buffer<bf16>(n * f, "u"),
                     a = Buffer<bf16>(n * f, "a");
  FillRandom(ctx, x, 21);
  FillRandom(ctx, u, 22);
  Row("rmsnorm fwd (N,C) fp32 → bf16",
      DeviceMs(
          ctx, 2, 20,
          [&] { return rmsnorm_forward<float, bf16>(ctx, y.get(), rstd.get(), x.get(), n, c); }),
      0, double(n * c) * 6);
  Row("relu² fwd (N,F) bf16",
      DeviceMs(ctx, 2, 20,
               [&] { return mlp_act_forward(ctx, a.get(), u.get(), n * f, s.m.mlp_act); }),
      0, double(n * f) * 4);
}

void BenchHead(CudaContext& ctx, const StepSetup& s) {
  int64_t n = s.b * s.t, c = s.m.model_dim, v = s.m.vocab_size;
  int64_t rows = std::min<int64_t>(n, 4096);
  DeviceBuffer<bf16> x = Buffer<bf16>(n * c, "x"), w = Buffer<bf16>(v * c, "w"),
                     dlogits = Buffer<bf16>(rows * v, "dlogits");
  DeviceBuffer<float> logits = Buffer<float>(rows * v, "logits"), losses = Buffer<float>(n, "l"),
                      dx = Buffer<float>(n * c, "dx"), dw = Buffer<float>(v * c, "dw");
  DeviceBuffer<int32_t> targets = Buffer<int32_t>(n, "targets");
  FillRandom(ctx, x, 31);
  FillRandom(ctx, w, 32);
  std::vector<int32_t> host_targets = Tokens(n, v, 0, 33);
  Check(ctx.ToDevice(targets.get(), host_targets.data(), n * 4), "targets");
  LmHeadScratch scratch{logits.get(), dlogits.get(), rows};
  Row("classifier (rows, V) fused fwd+bwd",
      DeviceMs(ctx, 2, 10,
               [&] {
                 return softcap_cross_entropy_forward(ctx, losses.get(), dlogits.get(),
                                                      logits.get(), targets.get(), rows, v,
                                                      s.m.softcap, 1.f / n);
               }),
      0, double(rows) * v * 10);
  Row("whole head fwd+bwd (N rows, chunked)",
      DeviceMs(ctx, 1, 5,
               [&] {
                 return lm_head_forward_backward(ctx, losses.get(), dx.get(), dw.get(), x.get(),
                                                 w.get(), targets.get(), n, c, v, s.m.softcap,
                                                 1.f / n, scratch);
               }),
      6.0 * n * c * v, 0);
}

// The per-op table; returns the number of rows that failed (attention's; every other failure
// ends the bench). Attention comes last: a kernel that faults poisons the context, and the rows
// before it still stand.
int BenchOps(CudaContext& ctx, const Options& o) {
  StepSetup s = Setup(o);
  int64_t n = s.b * s.t;
  std::printf("per-op, N=%lld tokens, C=%lld, F=%lld, V=%lld, %lld heads of %lld:\n", (long long)n,
              (long long)s.m.model_dim, (long long)s.m.hidden_dim(), (long long)s.m.vocab_size,
              (long long)s.m.n_head, (long long)s.m.head_dim);
  BenchGemms(ctx, n, s.m.model_dim, s.m.hidden_dim());
  BenchMemoryOps(ctx, s);
  BenchHead(ctx, s);
  std::vector<int32_t> tokens = Tokens(s.b * (s.t + 1), s.m.embed_vocab_size, s.m.bos_token, 41);
  return BenchAttention(ctx, s, tokens, LayerWindowBlocks(s.m, s.iters / 2, s.iters));
}

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
}  // namespace ablate::cuda

int main(int argc, char** argv) {
  using namespace ablate::cuda;
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
  if (o.step) BenchStep(*ctx, o, ceiling);
  int failed = o.ops ? BenchOps(*ctx, o) : 0;
  if (failed > 0) {
    std::fprintf(stderr, "trainer_gpu_bench: %d attention row(s) failed (above)\n", failed);
    return 1;
  }
  return 0;
}
