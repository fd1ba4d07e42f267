// CPU trainer throughput: tokens/s and achieved GFLOP/s of a training step at B=4, T=64,
// vocab 50304, for a small (4 layers, 4 heads, dim 128) and the GPT-2-small shape (12 layers,
// dim 768), next to this machine's own SGEMM rate measured in the same run.
//   trainer_cpu_bench [--threads N] [--steps N] [--shape small|big|all]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "trainer/cpu/blas_setup.h"
#include "trainer/config/knob_schema.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/parallel.h"
#include "trainer/dist/in_process_communicator.h"
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
  double fb_ms = 0, opt_ms = 0;
  for (int step = -1; step < steps; ++step) {  // step −1 warms up
    auto t0 = Clock::now();
    std::memset(gpt.grads().data(), 0, gpt.grads().size() * sizeof(float));
    gpt.Forward(tokens.data(), windows);
    gpt.Backward(1.f);
    auto t1 = Clock::now();
    (void)opt.Step(gpt.params().data(), gpt.grads().data(), step + 1, comm);
    auto t2 = Clock::now();
    if (step >= 0) fb_ms += Ms(t0, t1), opt_ms += Ms(t1, t2);
  }
  fb_ms /= steps, opt_ms /= steps;
  double gflops = StepFlops(m, b, t) / (fb_ms * 1e6);
  std::printf("%-22s params %6.1fM  fwd+bwd %8.1f ms  %7.0f tok/s  %6.1f GFLOP/s (%4.1f%% of "
              "SGEMM)  optimizer %8.1f ms  step %8.1f ms\n",
              s.name, gpt.layout().total() / 1e6, fb_ms, double(b * t) / (fb_ms / 1e3), gflops,
              100 * gflops / sgemm, opt_ms, fb_ms + opt_ms);
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
  double sgemm = std::max(ablate::SgemmGflops(1024, 1024, 1024), ablate::SgemmGflops(256, 3072, 768));
  std::printf("threads %d, B=4 T=64 V=50304; SGEMM %.1f GFLOP/s (best of 1024^3 and "
              "256x3072x768)\n", threads, sgemm);
  if (shape != "big") ablate::RunShape({"4L 4H d128", 4, 128, 4}, steps, sgemm);
  if (shape != "small") {
    ablate::RunShape({"12L 12H d768", 12, 768, 12}, std::max(1, steps / 2), sgemm);
  }
  return 0;
}
