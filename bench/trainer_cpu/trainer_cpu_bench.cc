// CPU trainer throughput: tokens/s and achieved GFLOP/s of a training step at B=4, T=64,
// vocab 50304, for a small (4 layers, 4 heads, dim 128) and the GPT-2-small shape (12 layers,
// dim 768), next to this machine's own SGEMM rate measured in the same run; and the tiny-scale
// presets (r20, r9) that the demo and CI train, with their amortised validation.
//   trainer_cpu_bench [--threads N] [--steps N] [--shape small|big|tiny|all]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "trainer/cpu/blas_setup.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/parallel.h"
#include "trainer/collectives/in_process_communicator.h"
#include "trainer/model/gpt.h"
#include "trainer/model/param_init.h"
#include "trainer/model/window_schedule.h"
#include "trainer/optim/optimizer.h"

namespace ablate {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// CPU time of the whole process (all threads), in ms: on a shared machine this is what a step
// costs, whatever share of the cores the other tenants leave us.
double CpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// Best of a few runs of C (m, n) = A (m, k) · Bᵀ, in GFLOP/s.
double SgemmGflops(int64_t m, int64_t n, int64_t k) {
  std::vector<float> a(m * k, 0.5f), b(n * k, 0.25f), c(m * n);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    cpu::matmul_forward(c.data(), a.data(), b.data(), m, k, n);
    double ms = Ms(t0, Clock::now());
    best = std::max(best, 2.0 * m * n * k / (ms * 1e6));
  }
  return best;
}

struct Shape {
  const char* name;
  int64_t n_layer, model_dim, n_head;
};

// Matmul FLOPs of forward + backward (6 per weight per token) plus causal attention.
double StepFlops(const ModelConfig& m, int64_t b, int64_t t) {
  double d = double(m.model_dim), f = double(m.hidden_dim());
  double per_layer = 3 * d * d + d * d + 2 * d * f;
  double matmul = 6.0 * (m.n_layer * per_layer + double(m.vocab_size) * d) * double(b * t);
  double attn = 6.0 * m.n_layer * double(b) * double(t * t) * d;
  return matmul + attn;
}

void RunShape(const Shape& s, int steps, double sgemm) {
  nlohmann::json c = {{"n_layer", s.n_layer}, {"model_dim", s.model_dim}, {"n_head", s.n_head},
                      {"head_dim", s.model_dim / s.n_head}, {"vocab_size", 50304},
                      {"seq_len", 64}, {"device_batch_tokens", 256}, {"batch_tokens", 256}};
  ModelConfig m = *ModelConfig::FromCanonical(*CanonicalizeConfig(c));
  OptimConfig oc = *OptimConfig::FromCanonical(*CanonicalizeConfig(c));
  int64_t b = 4, t = 64;
  Gpt<float> gpt(m, b, t);
  InitParams(m, gpt.layout(), 1, gpt.params().data());
  InProcessGroup group(1);
  InProcessCommunicator comm(&group, 0);
  Optimizer opt(oc, gpt.layout(), 0, 1);
  std::mt19937 rng(5);
  std::vector<int32_t> tokens(b * (t + 1));
  for (int32_t& x : tokens) x = int32_t(rng() % 50257);
  std::vector<int64_t> windows(m.n_layer, 0);
  double fb_ms = 0, opt_ms = 0, fb_cpu = 0, opt_cpu = 0;
  for (int step = -1; step < steps; ++step) {  // step −1 warms up
    auto t0 = Clock::now();
    double c0 = CpuMs();
    std::memset(gpt.grads().data(), 0, gpt.grads().size() * sizeof(float));
    gpt.Forward(tokens.data(), windows);
    gpt.Backward(1.f);
    auto t1 = Clock::now();
    if (step >= 0) fb_cpu += CpuMs() - c0;
    double c1 = CpuMs();
    (void)opt.Step(gpt.params().data(), gpt.grads().data(), step + 1, comm);
    auto t2 = Clock::now();
    if (step >= 0) fb_ms += Ms(t0, t1), opt_ms += Ms(t1, t2), opt_cpu += CpuMs() - c1;
  }
  fb_ms /= steps, opt_ms /= steps, fb_cpu /= steps, opt_cpu /= steps;
  double gflops = StepFlops(m, b, t) / (fb_ms * 1e6);
  std::printf("%-22s params %6.1fM  fwd+bwd %8.1f ms (cpu %6.1f)  %7.0f tok/s  %6.1f GFLOP/s (%4.1f%% of "
              "SGEMM)  optimizer %8.1f ms (cpu %6.1f)  step %8.1f ms (cpu %6.1f)\n",
              s.name, gpt.layout().total() / 1e6, fb_ms, fb_cpu, double(b * t) / (fb_ms / 1e3), gflops,
              100 * gflops / sgemm, opt_ms, opt_cpu, fb_ms + opt_ms, fb_cpu + opt_cpu);
}


// Wall and CPU ms of one phase, summed over the timed repetitions.
struct Phase {
  double wall = 0, cpu = 0;
  template <class Fn>
  void Time(bool timed, const Fn& fn) {
    auto t0 = Clock::now();
    double c0 = CpuMs();
    fn();
    if (timed) wall += Ms(t0, Clock::now()), cpu += CpuMs() - c0;
  }
};

// Byte-level text stand-in: random bytes with a BOS (256) starting a document every ~200 tokens.
std::vector<int32_t> TinyTokens(int64_t n) {
  std::mt19937 rng(7);
  std::vector<int32_t> out(n);
  for (int32_t& x : out) x = rng() % 200 == 0 ? 256 : int32_t(32 + rng() % 96);
  return out;
}

// One training step of a tiny preset as ablate-train runs it (one micro-batch, Muon + Adam), and
// its validation (val_tokens every val_every steps) amortised per step.
void RunTiny(const char* preset, int steps) {
  nlohmann::json c = *PresetConfig(preset, Scale::kTiny);
  ModelConfig m = *ModelConfig::FromCanonical(c);
  OptimConfig oc = *OptimConfig::FromCanonical(c);
  int64_t t = m.seq_len, b = c.at("device_batch_tokens").get<int64_t>() / t;
  int64_t val_batches = c.at("val_tokens").get<int64_t>() / (b * t);
  int64_t val_every = c.at("val_every").get<int64_t>(), iters = c.at("num_iterations");
  Gpt<float> gpt(m, b, t);
  InitParams(m, gpt.layout(), 1, gpt.params().data());
  InProcessGroup group(1);
  InProcessCommunicator comm(&group, 0);
  Optimizer opt(oc, gpt.layout(), 0, 1);
  std::vector<int32_t> tokens = TinyTokens(b * (t + 1));
  Phase fwd, bwd, optim, val;
  for (int step = -1; step < steps; ++step) {  // step −1 warms up
    bool timed = step >= 0;
    std::vector<int64_t> windows = LayerWindowBlocks(m, iters / 2, iters);
    std::fill(gpt.grads().begin(), gpt.grads().end(), 0.f);
    fwd.Time(timed, [&] { gpt.Forward(tokens.data(), windows); });
    bwd.Time(timed, [&] { gpt.Backward(1.f); });
    optim.Time(timed, [&] { (void)opt.Step(gpt.params().data(), gpt.grads().data(), iters / 2, comm); });
  }
  val.Time(true, [&] {
    std::vector<int64_t> windows = LayerWindowBlocks(m, iters / 2, iters);
    for (int64_t i = 0; i < val_batches; ++i) gpt.Forward(tokens.data(), windows);
  });
  double per_step_val = 1.0 / double(val_every);  // validations per step, amortised
  double wall = (fwd.wall + bwd.wall + optim.wall) / steps + val.wall * per_step_val;
  double cpu = (fwd.cpu + bwd.cpu + optim.cpu) / steps + val.cpu * per_step_val;
  std::printf("tiny %-13s B=%lld T=%lld  step %6.1f ms (cpu %6.1f)  %6.0f tok/s  fwd %5.1f  bwd "
              "%5.1f  optimizer %5.1f  val/%lld steps %5.1f (cpu ms)  %lld-step run ~%4.1f s\n",
              preset, (long long)b, (long long)t, wall, cpu, double(b * t) / (wall / 1e3),
              fwd.cpu / steps, bwd.cpu / steps, optim.cpu / steps, (long long)val_every,
              val.cpu * per_step_val, (long long)iters, wall * double(iters) / 1e3);
}

}  // namespace
}  // namespace ablate

int main(int argc, char** argv) {
  ablate::cpu::TuneCpuRuntime(argv);
  int threads = 2, steps = 5;
  std::string shape = "all";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--shape") == 0) shape = argv[i + 1];
  }
  ablate::cpu::SetThreads(threads);
  if (shape == "tiny" || shape == "all") {
    ablate::RunTiny("r20-sub3min", std::max(steps, 10));
    ablate::RunTiny("r9-shortcuts", std::max(steps, 10));
    if (shape == "tiny") return 0;
  }
  double sgemm = std::max(ablate::SgemmGflops(1024, 1024, 1024), ablate::SgemmGflops(256, 3072, 768));
  std::printf("threads %d, B=4 T=64 V=50304; SGEMM %.1f GFLOP/s (best of 1024^3 and "
              "256x3072x768)\n", threads, sgemm);
  if (shape == "small" || shape == "all") ablate::RunShape({"4L 4H d128", 4, 128, 4}, steps, sgemm);
  if (shape == "big" || shape == "all") {
    ablate::RunShape({"12L 12H d768", 12, 768, 12}, std::max(1, steps / 2), sgemm);
  }
  return 0;
}
