// The whole CUDA model against the CPU model: loss and every parameter's gradient on a tiny
// config with each knob of MODEL.md on in turn (the cases of model_grad_test), then a 50-step
// training run through Train() on both backends. bf16 operands through several layers put the
// gradients within a few percent of the fp32 CPU model; an indexing or wiring bug is off by
// O(1), which is what the thresholds are for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "tests/trainer/cuda_test_util.h"
#include "tests/trainer/train_fixture.h"
#include "trainer/config/knob_schema.h"
#include "trainer/cpu/parallel.h"
#include "trainer/cuda/gpt.h"
#include "trainer/model/gpt.h"
#include "trainer/model/window_schedule.h"
#include "trainer/train/trainer.h"

namespace ablate {
namespace {

using J = nlohmann::json;
using cuda::AttentionImpl;

// 4 layers of d 64 (2 heads of 32: the warp attention kernels), vocab 96, 2 × 80 tokens.
J TinyBase() {
  return {{"n_layer", 4},   {"model_dim", 64},      {"n_head", 2},
          {"head_dim", 32}, {"vocab_size", 96},     {"bos_token", 3},
          {"seq_len", 80},  {"batch_tokens", 160},  {"device_batch_tokens", 160},
          {"mlp_ratio", 2}, {"num_iterations", 10}, {"warmdown_iters", 2}};
}

struct KnobCase {
  std::string name;
  J overrides;
  AttentionImpl attention = AttentionImpl::kAuto;
};

double Norm(const std::vector<float>& v, int64_t off, int64_t n) {
  double s = 0;
  for (int64_t i = off; i < off + n; ++i) s += double(v[i]) * v[i];
  return std::sqrt(s);
}

class CudaModel : public testing::CudaTest, public ::testing::WithParamInterface<KnobCase> {};

// How far bf16-sized noise moves each gradient, measured on the CPU: the fp32 gradients again
// with every parameter scaled by (1 ± 2^-8), a random sign each (one bf16 rounding is at most
// 2^-9). A gradient that is one long sum with heavy cancellation (the scalar lambdas, skip
// weights; q and k without the qk norm, where random weights make the softmax peaky) moves by
// tens of percent under such noise, and the GPU, which rounds weights and activations to bf16,
// moves as far; a whole matrix's gradient moves by far less.
std::vector<float> PerturbedGrads(Gpt<float>& gpt, const std::vector<float>& params,
                                  const std::vector<int32_t>& tokens,
                                  const std::vector<int64_t>& windows) {
  std::mt19937 rng(testing::FreshSeed());
  std::vector<float>& p = gpt.params();
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = params[i] * (1.f + ((rng() & 1) ? 1.f : -1.f) * std::ldexp(1.f, -8));
  }
  gpt.Forward(tokens.data(), windows);
  std::fill(gpt.grads().begin(), gpt.grads().end(), 0.f);
  gpt.Backward(1.f);
  p = params;
  return gpt.grads();
}

TEST_P(CudaModel, LossAndGradientsMatchCpu) {
  // The GPU's error on a parameter's gradient must stay under a floor (relative) or kNoiseFactor
  // times what bf16-sized noise does to it on the CPU (PerturbedGrads), whichever is larger: a
  // wrong op moves a gradient by O(1), outside both. The floor is 0.1 for a matrix, 0.3 for a
  // scalar group (≤ 8 values, each one sum over every token and channel): weight noise does not
  // stand in for the GPU's bf16 rounding of activations (v, dv), which such a sum feels in full.
  // Measured on an H200 (2026-11-27, bench/trainer_gpu/NOTES.md): 20 repeats of the 25 cases,
  // fresh random inputs each: GPU errors up to 0.54 where the envelope was wide (q, k without the
  // qk norm; lambdas), and two scalar groups at 0.12 and 0.14 with envelopes of 0.007-0.008.
  constexpr double kNoiseFactor = 8.0, kFloor = 0.1, kScalarFloor = 0.3;
  J partial = TinyBase();
  partial.update(GetParam().overrides);
  Result<J> canonical = CanonicalizeConfig(partial);
  ASSERT_TRUE(canonical.ok()) << canonical.error().message;
  ModelConfig m = *ModelConfig::FromCanonical(*canonical);
  int64_t b = 2, t = 80;
  cpu::SetThreads(1);
  Gpt<float> cpu_gpt(m, b, t);
  std::vector<float> params = testing::Random(int64_t(cpu_gpt.params().size()), -0.5f, 0.5f);
  cpu_gpt.params() = params;
  std::vector<int32_t> tokens = testing::RandomIds(b * (t + 1), int32_t(m.embed_vocab_size));
  for (size_t i = 5; i < tokens.size(); i += 29) tokens[i] = 3;  // documents for doc masking
  std::vector<int64_t> windows = LayerWindowBlocks(m, 3, 10);
  float cpu_loss = cpu_gpt.Forward(tokens.data(), windows);
  std::fill(cpu_gpt.grads().begin(), cpu_gpt.grads().end(), 0.f);
  cpu_gpt.Backward(1.f);
  const std::vector<float> want = cpu_gpt.grads();
  const std::vector<float> noisy = PerturbedGrads(cpu_gpt, params, tokens, windows);

  Result<std::unique_ptr<cuda::Gpt>> made = cuda::Gpt::Create(ctx(), m, b, t);
  ASSERT_TRUE(made.ok()) << made.error().message;
  cuda::Gpt& gpu = **made;
  gpu.set_attention(GetParam().attention);
  ASSERT_TRUE(gpu.SetParams(params.data()).ok());
  ASSERT_TRUE(gpu.Forward(tokens.data(), windows, 1).ok());
  Result<float> eval_loss = gpu.TakeLoss();
  ASSERT_TRUE(eval_loss.ok()) << eval_loss.error().message;
  Status s = gpu.ForwardBackward(tokens.data(), windows, 1);
  ASSERT_TRUE(s.ok()) << s.message();
  // Every bf16 read of dx found the copy its last writer wrote (gpt_backward.cc).
  EXPECT_EQ(gpu.dxb_conversions(), 0) << "fp32 → bf16 passes over dx the writers left to do";
  Result<float> loss = gpu.TakeLoss();
  ASSERT_TRUE(loss.ok()) << loss.error().message;
  EXPECT_NEAR(*loss, cpu_loss, 2e-2 * std::abs(cpu_loss));
  EXPECT_NEAR(*eval_loss, *loss, 1e-6 * std::abs(*loss));  // the same forward either way

  std::vector<float> grads(params.size());
  ASSERT_TRUE(gpu.GetGrads(grads.data()).ok());
  double all = Norm(want, 0, int64_t(want.size()));
  ASSERT_GT(all, 0.0);
  double worst_ratio = 0;
  std::string worst;
  for (const ParamInfo& info : gpu.layout().params()) {
    std::vector<float> diff(static_cast<size_t>(info.numel)), moved(diff.size());
    for (int64_t i = 0; i < info.numel; ++i) {
      ASSERT_TRUE(std::isfinite(grads[info.offset + i])) << info.name;
      diff[i] = grads[info.offset + i] - want[info.offset + i];
      moved[i] = noisy[info.offset + i] - want[info.offset + i];
    }
    double denom = std::max(Norm(want, info.offset, info.numel), 1e-3 * all);
    double rel = Norm(diff, 0, info.numel) / denom, env = Norm(moved, 0, info.numel) / denom;
    double floor = info.numel <= 8 ? kScalarFloor : kFloor;
    EXPECT_LT(rel, std::max(floor, kNoiseFactor * env))
        << info.name << ": gpu error " << rel << ", bf16-noise envelope " << env;
    if (rel > kFloor && rel / env > worst_ratio) {
      worst_ratio = rel / env;
      worst = info.name + " (gpu error " + std::to_string(rel) + ", envelope " +
              std::to_string(env) + ")";
    }
  }
  // Read by the GPU session's log to keep kNoiseFactor honest.
  if (!worst.empty())
    std::cout << "over 0.1: worst gpu/envelope " << worst_ratio << " " << worst << "\n";
}

// r20's knobs at test size; head_dim 64 takes the tiled (or mma) attention kernels.
J R20Stack() {
  return {{"embed_shortcut", true},
          {"unet_skips", true},
          {"value_embeds", 2},
          {"merged_qkv", true},
          {"rope", "half_truncated"},
          {"attn_window", "sliding"},
          {"window.block_tokens", 16},
          {"window.start_tokens", 0},
          {"window.end_tokens", 64},
          {"window.rounding", "ceil"},
          {"long_short_windows", true},
          {"doc_masking", true},
          {"skip_attn_layers", {2}},
          {"attn_scale", 0.12},
          {"logit_softcap", 30.0},
          {"softcap_kind", "sigmoid"},
          {"embed_vocab_size", 90},
          {"n_head", 1},
          {"head_dim", 64}};
}

INSTANTIATE_TEST_SUITE_P(
    Knobs, CudaModel,
    ::testing::Values(
        KnobCase{"base", J::object()},
        KnobCase{"tiled_attention_hd64", {{"n_head", 1}, {"head_dim", 64}}},
        KnobCase{"tiled_attention_hd128", {{"model_dim", 128}, {"n_head", 1}, {"head_dim", 128}}},
        KnobCase{"tied", {{"tie_embeddings", true}}},
        KnobCase{"no_embed_norm", {{"embed_norm", false}}}, KnobCase{"gelu", {{"mlp_act", "gelu"}}},
        KnobCase{"no_qk_norm", {{"qk_norm", false}}},
        KnobCase{"attn_scale", {{"attn_scale", 0.12}}},
        KnobCase{"softcap_tanh", {{"logit_softcap", 15.0}}},
        KnobCase{"softcap_sigmoid", {{"logit_softcap", 30.0}, {"softcap_kind", "sigmoid"}}},
        KnobCase{"value_residual", {{"value_residual", true}}},
        KnobCase{"value_residual_skip0", {{"value_residual", true}, {"skip_attn_layers", {0}}}},
        // The last layer without attention: d(v1)'s first writer is layer 2.
        KnobCase{"value_residual_skip_last", {{"value_residual", true}, {"skip_attn_layers", {3}}}},
        KnobCase{"embed_shortcut", {{"embed_shortcut", true}}},
        KnobCase{"unet_skips", {{"unet_skips", true}}},
        KnobCase{"value_embeds_2", {{"value_embeds", 2}}},
        KnobCase{"value_embeds_all", {{"value_embeds", 4}}},
        KnobCase{"merged_qkv", {{"merged_qkv", true}}},
        KnobCase{"rope_half", {{"rope", "half_truncated"}}},
        KnobCase{"sliding",
                 {{"attn_window", "sliding"},
                  {"window.block_tokens", 16},
                  {"window.start_tokens", 16},
                  {"window.end_tokens", 64}}},
        KnobCase{"long_short",
                 {{"attn_window", "sliding"},
                  {"window.block_tokens", 16},
                  {"window.start_tokens", 0},
                  {"window.end_tokens", 64},
                  {"window.rounding", "ceil"},
                  {"long_short_windows", true}}},
        KnobCase{"doc_masking", {{"doc_masking", true}}},
        KnobCase{"skip_attn", {{"skip_attn_layers", {1, 2}}}},
        KnobCase{"embed_vocab", {{"embed_vocab_size", 90}}},
        // An odd vocabulary: the head's logits and dlogits have odd leading dimensions.
        KnobCase{"odd_vocab", {{"vocab_size", 97}}}, KnobCase{"r20_stack", R20Stack()},
        // activation_dtype bf16 (the r11/r18/r20 presets' default): both twins round x0, the
        // stream, the skip and shortcut mixes to bf16 at the same points.
        KnobCase{"bf16_stream",
                 {{"activation_dtype", "bf16"}, {"embed_shortcut", true}, {"unet_skips", true}}},
        KnobCase{"bf16_stream_no_embed_norm",
                 {{"activation_dtype", "bf16"}, {"embed_norm", false}, {"embed_shortcut", true}}},
        KnobCase{"r20_stack_bf16",
                 [] {
                   J j = R20Stack();
                   j.update({{"activation_dtype", "bf16"}, {"param_dtype.embed", "bf16"}});
                   return j;
                 }()},
        // The same through the mma attention kernels (head_dim 64), the whole model's check of
        // them before kAuto may choose them.
        KnobCase{"r20_stack_mma", R20Stack(), AttentionImpl::kMma}),
    [](const ::testing::TestParamInfo<KnobCase>& info) { return info.param.name; });

// 50 steps of an r20-like stack through Train() on each backend, from the same seed and data:
// the two loss curves stay together.
class CudaTraining : public testing::CudaTest {};

std::vector<J> RunTrain(const J& config, Backend backend, const testing::TempDir& dir,
                        AttentionImpl attention = AttentionImpl::kAuto) {
  TrainOptions o;
  o.backend = backend;
  o.threads = 2;
  o.attention = attention;
  return testing::TrainEvents(config, o, dir);
}

std::vector<double> Losses(const std::vector<J>& events, const char* kind, const char* field) {
  std::vector<double> out;
  for (const J& e : events) {
    if (e["event"] == kind) out.push_back(e[field].get<double>());
  }
  return out;
}

// Every learning rate of `config` times (1 + 2^-8): a perturbation of every update the size of
// one bf16 rounding (8 significant bits), applied at every step.
J WithBf16SizedLrPerturbation(const J& config) {
  Result<J> canonical = CanonicalizeConfig(config);
  EXPECT_TRUE(canonical.ok()) << canonical.error().message;
  if (!canonical.ok()) return config;
  J out = config;
  for (const char* knob : {"muon.lr", "adam.embed_lr", "adam.head_lr", "adam.scalar_lr"}) {
    out[knob] = (*canonical)[knob].get<double>() * (1.0 + 1.0 / 256.0);
  }
  return out;
}

// |a_i − b_i| / a_i, then the largest over the 5 steps around each step (drift is bursty; one
// step's value alone would make the band ragged).
std::vector<double> DriftEnvelope(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> rel(a.size()), env(a.size());
  for (size_t i = 0; i < a.size(); ++i) rel[i] = std::abs(a[i] - b[i]) / a[i];
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i < 2 ? 0 : i - 2; j < std::min(a.size(), i + 3); ++j) {
      env[i] = std::max(env[i], rel[j]);
    }
  }
  return env;
}

// 50 steps of an r20-like stack through Train() on each backend, from the same seed and data.
// The two curves cannot be equal: the GPU rounds operands to bf16, and a perturbed trajectory
// drifts. The tolerance is that drift as measured in this very run: a second CPU run whose every
// update is perturbed by one bf16 rounding (all learning rates × (1 + 2^-8)) gives, step by
// step, how far such noise moves this trajectory (the envelope). The GPU must stay within
// kNoiseFactor envelopes of the CPU (bf16 rounds in more places than the update: activations,
// gradients), with a floor for the steps where the envelope is tiny; a wrong op moves the curve
// by far more than rounding noise does. The first GPU session reads the printed ratios
// (gpu drift / envelope) in the log and tightens kNoiseFactor to what it saw.
constexpr double kTrajectoryNoiseFactor = 4.0, kTrajectoryFloor = 1e-2;

// The GPU's curves (train and validation losses of `gpu`, run with the attention kernels
// `kernels`) against the CPU's, within kTrajectoryNoiseFactor envelopes of the drift that
// bf16-sized noise causes (`noisy`), or the floor.
void ExpectCloseToCpu(const char* kernels, const std::vector<J>& cpu, const std::vector<J>& noisy,
                      const std::vector<J>& gpu) {
  constexpr double kNoiseFactor = kTrajectoryNoiseFactor, kFloor = kTrajectoryFloor;
  SCOPED_TRACE(std::string("attention kernels: ") + kernels);
  ASSERT_FALSE(gpu.empty());
  EXPECT_EQ(gpu.front()["backend"], "cuda");
  std::vector<double> cpu_train = Losses(cpu, "step", "train_loss");
  std::vector<double> noisy_train = Losses(noisy, "step", "train_loss");
  std::vector<double> gpu_train = Losses(gpu, "step", "train_loss");
  ASSERT_EQ(cpu_train.size(), 50u);
  ASSERT_EQ(noisy_train.size(), 50u);
  ASSERT_EQ(gpu_train.size(), 50u);
  // Step 1 is the same model on the same batch: only the forward's bf16 rounding differs.
  EXPECT_NEAR(gpu_train[0], cpu_train[0], 1e-2 * cpu_train[0]);
  std::vector<double> env = DriftEnvelope(cpu_train, noisy_train);
  double gpu_mean = 0, env_mean = 0, worst_ratio = 0;
  for (size_t i = 0; i < cpu_train.size(); ++i) {
    double rel = std::abs(gpu_train[i] - cpu_train[i]) / cpu_train[i];
    EXPECT_LT(rel, std::max(kFloor, kNoiseFactor * env[i]))
        << "step " << i + 1 << ": cpu " << cpu_train[i] << ", cuda " << gpu_train[i]
        << ", bf16-noise envelope " << env[i];
    gpu_mean += rel / double(cpu_train.size());
    env_mean += env[i] / double(cpu_train.size());
    worst_ratio = std::max(worst_ratio, rel / std::max(env[i], 1e-6));
  }
  std::cout << "trajectory drift (" << kernels << " attention): gpu mean " << gpu_mean
            << ", bf16-noise envelope mean " << env_mean << ", worst step gpu/envelope "
            << worst_ratio << "\n";
  EXPECT_LT(gpu_mean, std::max(kFloor / 2, kNoiseFactor * env_mean));
  EXPECT_LT(cpu_train.back(), cpu_train.front() - 1.0);  // the run does learn (4.2 → 0.75 here)
  std::vector<double> cpu_val = Losses(cpu, "val", "val_loss");
  std::vector<double> noisy_val = Losses(noisy, "val", "val_loss");
  std::vector<double> gpu_val = Losses(gpu, "val", "val_loss");
  ASSERT_EQ(cpu_val.size(), gpu_val.size());
  ASSERT_EQ(cpu_val.size(), noisy_val.size());
  for (size_t i = 0; i < cpu_val.size(); ++i) {
    double noise = std::abs(noisy_val[i] - cpu_val[i]) / cpu_val[i];
    EXPECT_NEAR(gpu_val[i], cpu_val[i], std::max(kFloor, kNoiseFactor * noise) * cpu_val[i])
        << "validation " << i;
  }
  EXPECT_EQ(gpu.back()["status"], "ok");
}

// The CPU's two runs of the trajectory tests (as configured, and with every update perturbed
// by one bf16 rounding), made once per process: both GPU tests compare against them.
struct CpuTrajectory {
  testing::TempDir dir;  // the shards, read again by the GPU runs
  J config;
  std::vector<J> cpu, noisy;
};

const CpuTrajectory& CpuTrajectoryOnce() {
  static CpuTrajectory trajectory;  // destroyed at exit, with its shards
  static const bool made = [] {
    CpuTrajectory* t = &trajectory;
    testing::WriteShards(t->dir);
    t->config = testing::SmallGpuTrainConfig({{"num_iterations", 50},
                                              {"warmdown_iters", 15},
                                              {"val_every", 25},
                                              {"embed_shortcut", true},
                                              {"unet_skips", true},
                                              {"value_embeds", 1},
                                              {"merged_qkv", true},
                                              {"attn_window", "sliding"},
                                              {"window.block_tokens", 16},
                                              {"window.start_tokens", 16},
                                              {"window.end_tokens", 64},
                                              {"doc_masking", true},
                                              {"logit_softcap", 30.0},
                                              {"softcap_kind", "sigmoid"},
                                              {"adam.eps", 1e-10}});
    t->cpu = RunTrain(t->config, Backend::kCpu, t->dir);
    t->noisy = RunTrain(WithBf16SizedLrPerturbation(t->config), Backend::kCpu, t->dir);
    return true;
  }();
  (void)made;
  return trajectory;
}

TEST_F(CudaTraining, FiftyStepTrajectoryStaysCloseToCpu) {
  const CpuTrajectory& c = CpuTrajectoryOnce();
  ExpectCloseToCpu("auto", c.cpu, c.noisy, RunTrain(c.config, Backend::kCuda, c.dir));
}

// The same through the mma attention kernels (head_dim 64 here): the whole-training check they
// need before kAuto may choose them.
TEST_F(CudaTraining, FiftyStepTrajectoryWithMmaAttentionStaysCloseToCpu) {
  const CpuTrajectory& c = CpuTrajectoryOnce();
  ExpectCloseToCpu("mma", c.cpu, c.noisy,
                   RunTrain(c.config, Backend::kCuda, c.dir, AttentionImpl::kMma));
}

}  // namespace
}  // namespace ablate
