// Optimizer and schedule values at the records' key steps (record-presets.md), Newton–Schulz
// output properties, momentum warm-up and attention window sizes per step and layer.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "trainer/config/presets.h"
#include "trainer/cpu/matmul.h"
#include "trainer/model/window_schedule.h"
#include "trainer/optim/lr_schedule.h"
#include "trainer/optim/muon.h"
#include "trainer/optim/optimizer.h"

namespace ablate {
namespace {

OptimConfig PresetOptim(const char* preset) {
  return *OptimConfig::FromCanonical(*PresetConfig(preset, Scale::kFull));
}

ModelConfig PresetModel(const char* preset) {
  return *ModelConfig::FromCanonical(*PresetConfig(preset, Scale::kFull));
}

TEST(LrSchedule, R9WarmdownAt3200Over914) {
  LrSchedule s = PresetOptim("r9-shortcuts").schedule;
  EXPECT_DOUBLE_EQ(s.Multiplier(0), 1.0);
  EXPECT_DOUBLE_EQ(s.Multiplier(2285), 1.0);  // last constant step: 3200 − 914 − 1
  EXPECT_DOUBLE_EQ(s.Multiplier(2286), 914.0 / 914.0);
  EXPECT_DOUBLE_EQ(s.Multiplier(2287), 913.0 / 914.0);
  EXPECT_DOUBLE_EQ(s.Multiplier(3199), 1.0 / 914.0);
}

TEST(LrSchedule, R18CooldownFraction) {
  LrSchedule s = PresetOptim("r18-softcap15").schedule;  // N = 1390, f = 0.4
  EXPECT_DOUBLE_EQ(s.Multiplier(0), 1.0);
  EXPECT_DOUBLE_EQ(s.Multiplier(834), 1.0);  // x = 0.6
  EXPECT_NEAR(s.Multiplier(1000), (1 - 1000.0 / 1390) / 0.4, 1e-12);
  EXPECT_NEAR(s.Multiplier(1389), (1 - 1389.0 / 1390) / 0.4, 1e-12);
}

TEST(LrSchedule, R20FloorPointOne) {
  LrSchedule s = PresetOptim("r20-sub3min").schedule;  // N = 1393
  double w = (1 - 1392.0 / 1393) / 0.4;
  EXPECT_NEAR(s.Multiplier(1392), w + (1 - w) * 0.1, 1e-12);
  EXPECT_NEAR(s.Multiplier(1393), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(s.Multiplier(10), 1.0);
}

TEST(LrSchedule, LinearWarmup) {
  LrSchedule s{100, 10, 20, 0, 0};
  EXPECT_DOUBLE_EQ(s.Multiplier(0), 0.1);
  EXPECT_DOUBLE_EQ(s.Multiplier(9), 1.0);
  EXPECT_DOUBLE_EQ(s.Multiplier(90), 0.5);
}

TEST(MomentumSchedule, R9WarmsUpOver500Steps) {
  MomentumSchedule m = PresetOptim("r9-shortcuts").muon.momentum;
  EXPECT_DOUBLE_EQ(m.At(0), 0.85);
  EXPECT_NEAR(m.At(250), 0.90, 1e-12);
  EXPECT_DOUBLE_EQ(m.At(500), 0.95);
  EXPECT_DOUBLE_EQ(m.At(3000), 0.95);
  EXPECT_DOUBLE_EQ(PresetOptim("r8-untied").muon.momentum.At(0), 0.95);
  EXPECT_NEAR(PresetOptim("r18-softcap15").muon.momentum.At(150), 0.90, 1e-12);
}

TEST(Windows, R18FloorSchedule) {
  ModelConfig m = PresetModel("r18-softcap15");  // ⌊(128(1−x)+1856x)/128⌋, N = 1390
  EXPECT_EQ(LongWindowBlocks(m.window, 0, 1390), 1);
  EXPECT_EQ(LongWindowBlocks(m.window, 1390, 1390), 14);
  EXPECT_EQ(LongWindowBlocks(m.window, 695, 1390), 7);  // (64 + 928)/128 = 7.75
  std::vector<int64_t> w = LayerWindowBlocks(m, 695, 1390);
  for (int64_t n : w) EXPECT_EQ(n, 7);
}

TEST(Windows, R20CeilScheduleAndLongShortPattern) {
  ModelConfig m = PresetModel("r20-sub3min");  // ⌈1728x/128⌉, N = 1393
  EXPECT_EQ(LongWindowBlocks(m.window, 0, 1393), 1);
  EXPECT_EQ(LongWindowBlocks(m.window, 103, 1393), 1);
  EXPECT_EQ(LongWindowBlocks(m.window, 104, 1393), 2);
  EXPECT_EQ(LongWindowBlocks(m.window, 1392, 1393), 14);
  EXPECT_EQ(LongWindowBlocks(m.window, 1393, 1393), 14);
  // L S S S L S | S L S S S L; short = long/2, 0 → the diagonal block.
  std::vector<int64_t> end = LayerWindowBlocks(m, 1393, 1393);
  EXPECT_EQ(end, (std::vector<int64_t>{14, 7, 7, 7, 14, 7, 7, 14, 7, 7, 7, 14}));
  std::vector<int64_t> start = LayerWindowBlocks(m, 0, 1393);
  EXPECT_EQ(start, std::vector<int64_t>(12, 1));
}

TEST(Windows, FullAttentionHasNoWindow) {
  ModelConfig m = PresetModel("r9-shortcuts");
  EXPECT_EQ(LayerWindowBlocks(m, 5, 10), std::vector<int64_t>(12, 0));
}

// Singular values of NS5's output land in roughly [0.68, 1.13] (modded-nanogpt README).
TEST(NewtonSchulz, OutputIsNearlyOrthogonal) {
  for (auto [rows, cols] : {std::pair{24, 24}, {48, 16}, {16, 48}}) {
    std::mt19937 rng(3);
    std::normal_distribution<float> n(0, 1);
    std::vector<float> x(rows * cols);
    for (float& v : x) v = n(rng);
    NewtonSchulz(x.data(), rows, cols, 5, {3.4445, -4.7750, 2.0315});
    int64_t r = std::min(rows, cols);
    std::vector<float> g(r * r);
    // Gram matrix over the short side: X Xᵀ if rows <= cols, else Xᵀ X.
    if (rows <= cols) {
      cpu::Gemm<float>(cpu::Trans::kNo, cpu::Trans::kYes, r, r, cols, 1.f, x.data(), cols,
                       x.data(), cols, 0.f, g.data(), r);
    } else {
      cpu::Gemm<float>(cpu::Trans::kYes, cpu::Trans::kNo, r, r, rows, 1.f, x.data(), cols,
                       x.data(), cols, 0.f, g.data(), r);
    }
    for (int64_t i = 0; i < r; ++i) {
      double sv = std::sqrt(g[i * r + i]);  // row norms bound the singular values' spread
      EXPECT_GT(sv, 0.5) << rows << "x" << cols;
      EXPECT_LT(sv, 1.25) << rows << "x" << cols;
      for (int64_t j = 0; j < r; ++j) {
        if (j != i) {
          EXPECT_LT(std::abs(g[i * r + j]), 0.35) << rows << "x" << cols;
        }
      }
    }
  }
}

TEST(Muon, ScaleRules) {
  EXPECT_DOUBLE_EQ(MuonScale(MuonScaleRule::kSqrtMax1Ratio, 3072, 768), 2.0);
  EXPECT_DOUBLE_EQ(MuonScale(MuonScaleRule::kSqrtMax1Ratio, 768, 3072), 1.0);
  EXPECT_DOUBLE_EQ(MuonScale(MuonScaleRule::kSqrtMaxDim, 768, 3072), std::sqrt(3072.0));
}

TEST(ParamGroups, FollowTheRecipes) {
  ModelConfig m = PresetModel("r20-sub3min");
  ParamLayout layout(m);
  EXPECT_EQ(layout.Find("blocks.0.attn.qkv.weight")->group, ParamGroup::kMuon);
  EXPECT_EQ(layout.Find("blocks.7.attn.qkv.weight"), nullptr);  // no attention in layer 7
  EXPECT_EQ(layout.Find("value_embeds.2.weight")->group, ParamGroup::kAdamEmbed);
  EXPECT_EQ(layout.Find("value_embeds.2.weight")->shape, (std::vector<int64_t>{50257, 768}));
  EXPECT_EQ(layout.Find("lm_head.weight")->shape, (std::vector<int64_t>{50304, 768}));
  EXPECT_EQ(layout.Find("skip_weights")->group, ParamGroup::kAdamScalar);
  EXPECT_EQ(layout.Find("blocks.3.attn.ve_lambdas")->group, ParamGroup::kAdamScalar);
  EXPECT_EQ(m.ValueEmbedTable(9), 0);
  EXPECT_EQ(m.ValueEmbedTable(11), 2);
  EXPECT_EQ(m.ValueEmbedTable(5), -1);
  nlohmann::json table = Optimizer::GroupTable(PresetOptim("r20-sub3min"), layout);
  EXPECT_EQ(table[0]["name"], "embed.weight");
  EXPECT_EQ(table[0]["lr"], 0.6);
}

}  // namespace
}  // namespace ablate
