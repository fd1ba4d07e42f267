// The confound check's decision (the ANOVA itself is checked against scipy in stats_scipy_live),
// the knob schema's step-work marking it relies on, and the verdict words of the time split.
#include "server/stats/confound.h"

#include <gtest/gtest.h>

#include "server/stats/verdict.h"
#include "trainer/config/step_work.h"

namespace ablate {
namespace {

TEST(Confound, DriftBetweenSameWorkVariantsIsConfounded) {
  // The demo: the baseline at 109 ms/step, the last variant at 203, all doing the same work.
  const ConfoundCheck c = CheckConfound({{"baseline", {109, 111, 108}},
                                         {"adam-eps-1e-8", {140, 138, 150}},
                                         {"default-attn-scale", {203, 199, 207}}});
  ASSERT_TRUE(c.test.has_value());
  EXPECT_TRUE(c.confounded);
  EXPECT_LT(c.test->p_value, kConfoundAlpha);
  EXPECT_NEAR(*c.relative_spread, (203.0 - 109.33333333333333) / 109.33333333333333, 1e-12);
  EXPECT_NE(c.message.find("machine speed changed during the sweep"), std::string::npos)
      << c.message;
  EXPECT_NE(c.message.find("baseline, adam-eps-1e-8, default-attn-scale"), std::string::npos);
}

TEST(Confound, SameSpeedIsNotConfounded) {
  const ConfoundCheck c =
      CheckConfound({{"baseline", {40.1, 39.8, 40.4, 40.0}}, {"lr", {40.0, 39.9, 40.2, 40.1}}});
  ASSERT_TRUE(c.test.has_value());
  EXPECT_FALSE(c.confounded);
  EXPECT_NE(c.message.find("show no significant difference in ms/step"), std::string::npos) << c.message;
}

TEST(Confound, NeedsTwoGroupsWithTwoValues) {
  const ConfoundCheck c = CheckConfound({{"baseline", {40, 41}}, {"lr", {80}}});
  EXPECT_FALSE(c.test.has_value());
  EXPECT_FALSE(c.confounded);
  EXPECT_EQ(c.variants, std::vector<std::string>{"baseline"});
  EXPECT_NE(c.message.find("not tested"), std::string::npos);
}

TEST(Confound, ZeroNoiseDecidesBySign) {
  const std::optional<AnovaResult> apart = OneWayAnova({{40, 40}, {41, 41}});
  ASSERT_TRUE(apart);
  EXPECT_TRUE(std::isinf(apart->f));
  EXPECT_EQ(apart->p_value, 0.0);
  const std::optional<AnovaResult> same = OneWayAnova({{40, 40}, {40, 40}});
  EXPECT_EQ(same->p_value, 1.0);
  EXPECT_FALSE(OneWayAnova({{1, 2, 3}}).has_value());
}

TEST(StepWork, KnobsAreMarkedByWhetherTheyChangeAStep) {
  using J = nlohmann::json;
  for (const char* same : {"attn_scale", "muon.lr", "adam.eps", "muon.momentum_warmup_steps",
                           "adam.beta1", "num_iterations", "seed"}) {
    EXPECT_FALSE(ChangesStepWork(same, J(1), J(2))) << same;
  }
  for (const char* changes : {"model_dim", "n_layer", "attn_window", "value_embeds",
                              "skip_attn_layers", "merged_qkv", "mlp_act", "embed_shortcut"}) {
    EXPECT_TRUE(ChangesStepWork(changes, J(1), J(2))) << changes;
  }
  // The softcap constant is the same work, switching the cap on or off is not.
  EXPECT_FALSE(ChangesStepWork("logit_softcap", J(30), J(15)));
  EXPECT_TRUE(ChangesStepWork("logit_softcap", J(0), J(15)));
  EXPECT_TRUE(ChangesStepWork("no_such_knob", J(1), J(2)));
}

TEST(SplitVerdicts, WordsPerMetricAndTheConfoundedVerdict) {
  EXPECT_EQ(DirectionWord(Metric::kStepsToTarget, true), "fewer steps");
  EXPECT_EQ(DirectionWord(Metric::kMsPerStep, false), "slower steps");
  EXPECT_EQ(DirectionWord(Metric::kTimeToTarget, true), "faster");
  EXPECT_EQ(ConfoundedVerdict("fewer steps", "no difference"), "confounded; steps: fewer steps");
  EXPECT_EQ(ConfoundedVerdict("no difference", "worse"), "confounded; steps: no difference, worse");
  VariantStats none_reached;
  none_reached.n = 3;
  MetricComparison c;
  EXPECT_EQ(MetricVerdict(c, Metric::kStepsToTarget, none_reached), "never reached");
  EXPECT_EQ(MetricVerdict(c, Metric::kMsPerStep, none_reached), "no data");
}

}  // namespace
}  // namespace ablate
