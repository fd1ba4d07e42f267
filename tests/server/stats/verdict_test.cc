// Verdict rules (server/stats/verdict.h) on hand-built comparisons, and on a sweep end to end.
#include "server/stats/verdict.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ablate {
namespace {

// A comparison with enough runs whose Holm p and difference are as given.
MetricComparison Compared(double difference, double p_holm, int n = 4) {
  MetricComparison c;
  c.n_variant = n;
  c.n_baseline = n;
  c.difference = difference;
  c.welch = TTestResult{};
  c.welch_p_holm = p_holm;
  c.underpowered = n < kMinRunsToTell;
  return c;
}

VariantStats Reached(int n, int n_reached) {
  VariantStats s;
  s.n = n;
  s.n_reached = n_reached;
  return s;
}

TEST(MetricVerdictTest, SignificantDirectionsPerMetric) {
  const VariantStats all = Reached(4, 4);
  EXPECT_EQ(MetricVerdict(Compared(-900, 0.01), Metric::kTimeToTarget, all), "faster");
  EXPECT_EQ(MetricVerdict(Compared(900, 0.01), Metric::kTimeToTarget, all), "slower");
  EXPECT_EQ(MetricVerdict(Compared(-0.002, 0.049), Metric::kFinalValLoss, all), "better");
  EXPECT_EQ(MetricVerdict(Compared(0.002, 0.0), Metric::kFinalValLoss, all), "worse");
}

TEST(MetricVerdictTest, NotSignificantUnderpoweredAndMissing) {
  const VariantStats all = Reached(4, 4);
  EXPECT_EQ(MetricVerdict(Compared(-0.002, 0.05), Metric::kFinalValLoss, all), "no difference");
  EXPECT_EQ(MetricVerdict(Compared(-0.002, 0.001, 2), Metric::kFinalValLoss, all), "underpowered");
  MetricComparison empty;
  empty.n_baseline = 4;
  EXPECT_EQ(MetricVerdict(empty, Metric::kFinalValLoss, Reached(0, 0)), "no data");
  EXPECT_EQ(MetricVerdict(empty, Metric::kTimeToTarget, Reached(0, 0)), "no data");
  EXPECT_EQ(MetricVerdict(empty, Metric::kTimeToTarget, Reached(3, 0)), "never reached");
}

TEST(CombinedVerdictTest, SignificantWordsFirstThenMostCautious) {
  EXPECT_EQ(CombinedVerdict("faster", "worse"), "faster, worse");
  EXPECT_EQ(CombinedVerdict("faster", "underpowered"), "faster");
  EXPECT_EQ(CombinedVerdict("no difference", "better"), "better");
  EXPECT_EQ(CombinedVerdict("never reached", "no difference"), "never reached");
  EXPECT_EQ(CombinedVerdict("no difference", "underpowered"), "underpowered");
  EXPECT_EQ(CombinedVerdict("no data", "no difference"), "no difference");
  EXPECT_EQ(CombinedVerdict("no data", "no data"), "no data");
}

std::vector<RunOutcome> TimedRuns(const std::vector<double>& losses, double time0) {
  std::vector<RunOutcome> runs;
  for (size_t i = 0; i < losses.size(); ++i) {
    RunOutcome r;
    r.seed = static_cast<int>(i);
    r.final_val_loss = losses[i];
    r.reached_target = true;
    r.time_to_target_ms = time0 + 300.0 * static_cast<double>(i % 3);
    runs.push_back(r);
  }
  return runs;
}

TEST(VerdictSweepTest, HolmDecidesAcrossAblations) {
  // Ablation 0 is 10 s faster with 300 ms of noise: significant after Holm. Ablation 1 differs
  // by 100 ms with the same noise: not significant.
  const std::vector<RunOutcome> baseline = TimedRuns({3.279, 3.280, 3.281, 3.280}, 180000);
  const std::vector<std::vector<RunOutcome>> ablations = {
      TimedRuns({3.279, 3.280, 3.281, 3.280}, 170000),
      TimedRuns({3.279, 3.280, 3.281, 3.280}, 180100)};
  const std::vector<VariantComparison> out = CompareSweep(baseline, ablations);
  ASSERT_EQ(out.size(), 2u);
  const VariantStats all = Reached(4, 4);
  EXPECT_EQ(MetricVerdict(out[0].time_to_target_ms, Metric::kTimeToTarget, all), "faster");
  EXPECT_EQ(MetricVerdict(out[1].time_to_target_ms, Metric::kTimeToTarget, all), "no difference");
  EXPECT_EQ(MetricVerdict(out[0].final_val_loss, Metric::kFinalValLoss, all), "no difference");
}

TEST(MethodTextTest, SaysHowUnreachedRunsCount) {
  const std::string text = ComparisonMethodText(3.28);
  EXPECT_NE(text.find("<= 3.28"), std::string::npos) << text;
  EXPECT_NE(text.find("lower bound"), std::string::npos);
  EXPECT_NE(text.find("fewer than 3 values"), std::string::npos);
  EXPECT_NE(text.find("Holm"), std::string::npos);
}

}  // namespace
}  // namespace ablate
