// Sweep-spec expansion: the DESIGN §3 example and the shipped examples, grids, determinism,
// dotted vs nested keys, defaults, and the run configs handed to the trainer.
#include "server/sweep/sweep_spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"

namespace ablate {
namespace {

using J = nlohmann::json;

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(ABLATE_EXAMPLES_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ExpandedSweep MustParse(const std::string& text, const std::string& file = "spec.yaml") {
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(text, file);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : ExpandedSweep{};
}

std::vector<std::string> VariantNames(const ExpandedSweep& s) {
  std::vector<std::string> names;
  for (const Variant& v : s.variants) names.push_back(v.name);
  return names;
}

J Config(const Variant& v) { return J::parse(v.config_json); }

TEST(SeedAblations, ExpandsToSixVariantsTimesEightSeeds) {
  std::string text = ReadExample("seed-ablations.yaml");
  ExpandedSweep s = MustParse(text, "seed-ablations.yaml");
  EXPECT_EQ(VariantNames(s),
            (std::vector<std::string>{"baseline", "softcap-30", "no-momentum-warmup", "no-unet",
                                      "default-attn-scale", "adam-eps-1e-8"}));
  ASSERT_EQ(s.runs.size(), 48u);
  for (size_t i = 0; i < s.runs.size(); ++i) {
    EXPECT_EQ(s.runs[i].variant_id, static_cast<int64_t>(i / 8));
    EXPECT_EQ(s.runs[i].variant_name, s.variants[i / 8].name);
    EXPECT_EQ(s.runs[i].seed, static_cast<int>(i % 8));
    EXPECT_EQ(s.runs[i].id, 0);
  }
  std::set<std::string> hashes;
  for (size_t i = 0; i < s.variants.size(); ++i) {
    EXPECT_EQ(s.variants[i].index, static_cast<int>(i));
    EXPECT_EQ(s.variants[i].config_hash, ConfigHash(Config(s.variants[i])));
    hashes.insert(s.variants[i].config_hash);
  }
  EXPECT_EQ(hashes.size(), 6u);
  EXPECT_EQ(s.variants[0].diff_json, "{}");
  EXPECT_EQ(J::parse(s.variants[3].diff_json),
            (J{{"unet_skips", {{"from", true}, {"to", false}}}}));
  EXPECT_EQ(J::parse(s.variants[1].diff_json),
            (J{{"softcap_kind", {{"from", "sigmoid"}, {"to", "tanh"}}}}));
  EXPECT_EQ(J::parse(s.variants[5].diff_json), (J{{"adam.eps", {{"from", 1e-10}, {"to", 1e-8}}}}));
  EXPECT_EQ(J::parse(s.variants[4].diff_json), (J{{"attn_scale", {{"from", 0.12}, {"to", 0.0}}}}));
  EXPECT_EQ(J::parse(s.variants[2].diff_json),
            (J{{"muon.momentum_warmup_steps", {{"from", 300}, {"to", 0}}}}));
  // The baseline is the r20 preset itself.
  EXPECT_EQ(Config(s.variants[0]), *PresetConfig("r20-sub3min", Scale::kFull));

  const Sweep& sw = s.sweep;
  EXPECT_EQ(sw.name, "seed-ablations");
  EXPECT_EQ(sw.spec_yaml, text);
  EXPECT_EQ(sw.baseline_preset, "r20-sub3min");
  EXPECT_EQ(sw.scale, "full");
  EXPECT_EQ(sw.dataset, "fineweb10B");
  EXPECT_DOUBLE_EQ(sw.target_val_loss, 3.28);
  EXPECT_EQ(sw.seeds, 8);
  EXPECT_EQ(sw.gpus_per_run, 8);
  EXPECT_EQ(sw.priority, 0);
  EXPECT_EQ(sw.max_concurrent, 0);
  EXPECT_EQ(sw.max_attempts, 3);
}

// DESIGN §3 as printed: against r20 (cap 30 with a sigmoid) `logit_softcap: 30` is a no-op.
TEST(SeedAblations, DesignTextSoftcapThirtyIsANoOpOnR20) {
  const char* design =
      "name: seed-ablations\n"
      "baseline: {preset: r20-sub3min, scale: full}\n"
      "target_val_loss: 3.28\n"
      "seeds: 8                    # per variant, baseline included\n"
      "gpus_per_run: 8\n"
      "ablations:\n"
      "  - {name: softcap-30,        set: {logit_softcap: 30}}\n"
      "  - {name: no-momentum-warmup, set: {muon.momentum_warmup_steps: 0}}\n"
      "  - {name: no-unet,            set: {unet_skips: false}}\n"
      "  - {name: default-attn-scale, set: {attn_scale: 0}}      # 0 means 1/sqrt(head_dim)\n"
      "  - {name: adam-eps-1e-8,      set: {adam.eps: 1.0e-8}}\n";
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(design, "design.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "design.yaml:7:5: ablations[0]: ablation 'softcap-30' changes nothing: the baseline "
            "already has logit_softcap = 30.0");
}

TEST(DemoTiny, RunsTheSeedAblationsOnOneCpuSlot) {
  ExpandedSweep s = MustParse(ReadExample("demo-tiny.yaml"), "demo-tiny.yaml");
  EXPECT_EQ(s.variants.size(), 6u);
  EXPECT_EQ(s.runs.size(), 18u);  // 6 variants x 3 seeds
  EXPECT_EQ(s.sweep.scale, "tiny");
  EXPECT_EQ(s.sweep.gpus_per_run, 0);
  EXPECT_EQ(s.sweep.dataset, "debian-text");
  EXPECT_EQ(s.sweep.tags, (std::vector<std::string>{"demo", "tiny"}));
  // Half the tiny scale's 300 steps (issue 25: the demo in about 3 minutes), the one absolute
  // schedule length halved with them, and a target the shorter runs reach.
  EXPECT_DOUBLE_EQ(s.sweep.target_val_loss, 2.3);
  nlohmann::json tiny = *PresetConfig("r20-sub3min", Scale::kTiny);
  EXPECT_EQ(tiny["num_iterations"], 300);
  EXPECT_EQ(tiny["muon.momentum_warmup_steps"], 65);
  tiny["num_iterations"] = 150;
  tiny["muon.momentum_warmup_steps"] = 32;
  tiny["target_val_loss"] = 2.3;
  EXPECT_EQ(Config(s.variants[0]), tiny);
  for (const Variant& v : s.variants) EXPECT_EQ(Config(v)["vocab_size"], 512);
}

const char kGridSpec[] =
    "name: grid\n"
    "baseline: {preset: r20-sub3min, scale: tiny}\n"
    "seeds: 3\n"
    "ablations:\n"
    "  - {name: no-unet, set: {unet_skips: false}}\n"
    "grid:\n"
    "  muon.lr: [0.04, 0.06]\n"
    "  logit_softcap: [15, 20]\n";

TEST(Grid, ExpandsTheCartesianProductFirstKeyOutermost) {
  ExpandedSweep s = MustParse(kGridSpec);
  EXPECT_EQ(VariantNames(s), (std::vector<std::string>{
                                 "baseline", "no-unet", "muon.lr=0.04,logit_softcap=15",
                                 "muon.lr=0.04,logit_softcap=20", "muon.lr=0.06,logit_softcap=15",
                                 "muon.lr=0.06,logit_softcap=20"}));
  EXPECT_EQ(s.runs.size(), 18u);
  J last = Config(s.variants[5]);
  EXPECT_EQ(last["muon.lr"], 0.06);
  EXPECT_EQ(last["logit_softcap"], 20.0);
  EXPECT_EQ(J::parse(s.variants[2].diff_json).size(), 2u);
}

TEST(Grid, WithoutBaselineHasOnlyGridPoints) {
  std::string text = std::string(kGridSpec) + "include_baseline: false\n";
  ExpandedSweep s = MustParse(text);
  ASSERT_EQ(s.variants.size(), 5u);
  EXPECT_EQ(s.variants[0].name, "no-unet");
  EXPECT_EQ(s.variants[0].index, 0);
  EXPECT_EQ(s.runs.size(), 15u);
}

TEST(Grid, APointEqualToTheBaselineIsMergedWithIt) {
  // The example: a grid around r20's muon.lr of 0.05.
  std::string text =
      "name: grid\nbaseline: {preset: r20-sub3min, scale: tiny}\nseeds: 2\n"
      "grid:\n  muon.lr: [0.03, 0.05, 0.07]\n";
  ExpandedSweep s = MustParse(text, "g.yaml");
  EXPECT_EQ(VariantNames(s),
            (std::vector<std::string>{"baseline", "muon.lr=0.03", "muon.lr=0.07"}));
  EXPECT_EQ(s.runs.size(), 6u) << "the merged point's runs are the baseline's, not extra ones";
  EXPECT_EQ(s.notes, std::vector<std::string>{
                         "grid point 'muon.lr=0.05' is the baseline itself (muon.lr = 0.05): "
                         "merged with the baseline"});
}

TEST(Grid, WithoutBaselineAPointEqualToItIsAnOrdinaryVariant) {
  std::string text =
      "name: grid\nbaseline: {preset: r20-sub3min, scale: tiny}\ninclude_baseline: false\n"
      "grid:\n  muon.lr: [0.04, 0.05]\n";
  ExpandedSweep s = MustParse(text, "g.yaml");
  EXPECT_EQ(VariantNames(s), (std::vector<std::string>{"muon.lr=0.04", "muon.lr=0.05"}));
  EXPECT_TRUE(s.notes.empty());
}

TEST(Grid, AnAblationThatChangesNothingIsStillAnError) {
  std::string text =
      "name: grid\nbaseline: {preset: r20-sub3min, scale: tiny}\n"
      "ablations:\n  - {name: same-lr, set: {muon.lr: 0.05}}\n";
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(text, "g.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ablation 'same-lr' changes nothing: the baseline already "
                                      "has muon.lr = 0.05"),
            std::string::npos)
      << r.status();
}

TEST(RunOrder, RunsCarryBlockedShuffledRanks) {
  ExpandedSweep s = MustParse(std::string(kGridSpec) + "order_seed: 11\n");
  EXPECT_EQ(s.sweep.order_seed, 11);
  const int n = static_cast<int>(s.variants.size());
  std::vector<std::vector<int>> blocks(3);
  for (const ablate::Run& r : s.runs) {
    EXPECT_GE(r.dispatch_order, int64_t{r.seed} * n) << "block " << r.seed;
    EXPECT_LT(r.dispatch_order, int64_t{r.seed + 1} * n) << "block " << r.seed;
    blocks[r.seed].push_back(static_cast<int>(r.dispatch_order - int64_t{r.seed} * n));
  }
  for (std::vector<int>& b : blocks) {
    std::sort(b.begin(), b.end());
    EXPECT_EQ(b, (std::vector<int>{0, 1, 2, 3, 4, 5})) << "one rank per variant in each block";
  }
  // Without order_seed the spec text seeds it, the same on every expansion.
  EXPECT_EQ(MustParse(kGridSpec).sweep.order_seed, MustParse(kGridSpec).sweep.order_seed);
  EXPECT_NE(MustParse(kGridSpec).sweep.order_seed, 0);
}

TEST(Grid, CrossRuleViolationsNameThePoint) {
  std::string text =
      "name: grid\nbaseline: {preset: r20-sub3min, scale: tiny}\n"
      "grid:\n  n_head: [1, 3]\n";
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(text, "g.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("g.yaml:4:3: grid: grid point 'n_head=1': model_dim (64) "
                                      "must equal n_head (1) * head_dim (32)"),
            std::string::npos)
      << r.status();
}

TEST(Determinism, SameSpecSameOutput) {
  ExpandedSweep a = MustParse(kGridSpec);
  ExpandedSweep b = MustParse(kGridSpec);
  ASSERT_EQ(a.variants.size(), b.variants.size());
  for (size_t i = 0; i < a.variants.size(); ++i) {
    EXPECT_EQ(a.variants[i].name, b.variants[i].name);
    EXPECT_EQ(a.variants[i].config_json, b.variants[i].config_json);
    EXPECT_EQ(a.variants[i].config_hash, b.variants[i].config_hash);
    EXPECT_EQ(a.variants[i].diff_json, b.variants[i].diff_json);
  }
  ASSERT_EQ(a.runs.size(), b.runs.size());
  for (size_t i = 0; i < a.runs.size(); ++i) {
    EXPECT_EQ(a.runs[i].variant_id, b.runs[i].variant_id);
    EXPECT_EQ(a.runs[i].seed, b.runs[i].seed);
  }
}

TEST(KnobKeys, NestedAndDottedGiveTheSameConfig) {
  std::string head = "name: k\nbaseline: {preset: r11-unet, scale: small}\nablations:\n";
  ExpandedSweep dotted = MustParse(
      head + "  - {name: a, set: {muon.lr: 0.05, adam.eps: 1.0e-10, window.rounding: ceil}}\n");
  ExpandedSweep nested = MustParse(head +
                                   "  - name: a\n"
                                   "    set:\n"
                                   "      muon: {lr: 0.05}\n"
                                   "      adam:\n"
                                   "        eps: 1.0e-10\n"
                                   "      window: {rounding: ceil}\n");
  ASSERT_EQ(dotted.variants.size(), 2u);
  ASSERT_EQ(nested.variants.size(), 2u);
  EXPECT_EQ(dotted.variants[1].config_json, nested.variants[1].config_json);
  EXPECT_EQ(dotted.variants[1].config_hash, nested.variants[1].config_hash);
}

TEST(KnobKeys, ScalarsAreReadByTheKnobsType) {
  ExpandedSweep s = MustParse(
      "name: types\nbaseline:\n  set: {mlp_act: gelu, skip_attn_layers: [7, 3], n_layer: 12.0}\n"
      "ablations:\n  - {name: a, set: {logit_softcap: '15', unet_skips: True}}\n");
  J base = Config(s.variants[0]);
  EXPECT_EQ(base["mlp_act"], "gelu");
  EXPECT_EQ(base["skip_attn_layers"], J({3, 7}));
  EXPECT_EQ(base["n_layer"], 12);
  J a = Config(s.variants[1]);
  EXPECT_EQ(a["logit_softcap"], 15.0);
  EXPECT_EQ(a["unet_skips"], true);
}

TEST(Defaults, BaselineWithoutPresetIsTheSchemaDefaultsAtScale) {
  ExpandedSweep s = MustParse("name: d\nbaseline: {scale: small}\n");
  ASSERT_EQ(s.variants.size(), 1u);
  EXPECT_EQ(s.sweep.baseline_preset, "");
  EXPECT_EQ(s.sweep.scale, "small");
  EXPECT_EQ(s.sweep.dataset, "fineweb10B");
  EXPECT_EQ(s.sweep.seeds, 1);
  EXPECT_EQ(s.sweep.gpus_per_run, 1);
  EXPECT_EQ(Config(s.variants[0]), *ApplyScale(*CanonicalizeConfig(J::object()), Scale::kSmall));
}

TEST(Defaults, TargetIsCopiedIntoEveryConfig) {
  ExpandedSweep s = MustParse(
      "name: t\nbaseline: {preset: r18-softcap15, scale: tiny}\ntarget_val_loss: 2.5\n"
      "priority: -5\nmax_concurrent: 4\nmax_attempts: 1\ndataset: my-text\n"
      "ablations:\n  - {name: a, set: {attn_scale: 0.1}}\n");
  EXPECT_DOUBLE_EQ(s.sweep.target_val_loss, 2.5);
  for (const Variant& v : s.variants) EXPECT_EQ(Config(v)["target_val_loss"], 2.5);
  EXPECT_EQ(s.sweep.priority, -5);
  EXPECT_EQ(s.sweep.max_concurrent, 4);
  EXPECT_EQ(s.sweep.max_attempts, 1);
  EXPECT_EQ(s.sweep.dataset, "my-text");
  EXPECT_EQ(s.sweep.baseline_preset, "r18-softcap15");
}

TEST(RunConfigs, CarryTheRunsSeedAndTheVariantsKnobs) {
  ExpandedSweep s = MustParse(kGridSpec);
  const ablate::Run& run = s.runs[7];  // variant 2, seed 1
  const Variant& v = s.variants[run.variant_id];
  J config = RunConfig(v, run.seed);
  EXPECT_EQ(config["seed"], 1);
  EXPECT_EQ(ConfigHash(config), v.config_hash);
  EXPECT_EQ(Config(v)["seed"], 0);  // the variant keeps the baseline's seed
}

TEST(Names, FormatVariantName) {
  EXPECT_EQ(FormatVariantName({{"muon.lr", "0.04"}, {"logit_softcap", "15"}}),
            "muon.lr=0.04,logit_softcap=15");
  EXPECT_EQ(FormatVariantName({}), "");
}

TEST(Anchors, AliasedSetsAreReadLikeCopies) {
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(
      "name: a\nbaseline: {preset: r20-sub3min, scale: tiny}\nablations:\n"
      "  - {name: a, set: &s {attn_scale: 0}}\n  - {name: b, set: *s}\n",
      "anchors.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "anchors.yaml:5:5: ablations[1]: ablation 'b' is identical to 'a'");
}

}  // namespace
}  // namespace ablate
