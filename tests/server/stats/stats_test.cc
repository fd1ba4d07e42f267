// server/stats against scipy 1.10 (Debian python3-scipy). Every expected number below was
// produced by /usr/bin/python3 with the snippet quoted beside it (imports: numpy as np,
// scipy.stats as stats) and is compared at 1e-9 relative. stats_scipy_live re-checks many
// generated cases against a live scipy at test time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "server/stats/holm.h"
#include "common/stats/record_rule.h"
#include "common/stats/sample_stats.h"
#include "common/stats/t_tests.h"
#include "server/stats/variant_stats.h"

namespace ablate {
namespace {

void ExpectRel(double actual, double expected, double rel = 1e-9) {
  EXPECT_NEAR(actual, expected, rel * std::max(std::fabs(expected), 1e-300))
      << "expected " << expected;
}

// The r20 variance figure (n = 32, mean 3.27869, std 0.00176), synthesised:
//   rng = np.random.default_rng(20); z = rng.standard_normal(32)
//   r20 = 3.27869 + 0.00176 * (z - z.mean()) / z.std(ddof=1)   # printed with %.17g
const std::vector<double> kR20 = {
    3.2785497072709462, 3.2812987941114247, 3.2816385175083598, 3.2797400207652192,
    3.2799104130903407, 3.2783213153077604, 3.2775747217184374, 3.27759891834696,
    3.2774264644408682, 3.2808161473993631, 3.2790831846676638, 3.2794077465574349,
    3.278056805700587,  3.2772692822835392, 3.2770685762823439, 3.277702301116419,
    3.2802357689470063, 3.2792145983630698, 3.2783789546024709, 3.2787614091141699,
    3.2766722510995172, 3.2813462855999331, 3.2770431466689551, 3.2792566990315621,
    3.2829399707490126, 3.2746959901980746, 3.2767080812041836, 3.2779095595734158,
    3.2793871242235459, 3.2761666199831425, 3.2787684410822266, 3.2791321829920492};

const std::vector<double> kSmallA = {3.2811, 3.2795, 3.2820};
const std::vector<double> kSmallB = {3.2790, 3.2802, 3.2785, 3.2799, 3.2781};

TEST(SampleStatsTest, R20MeanStdAndCi) {
  // np.mean(r20), np.std(r20, ddof=1), stats.t.ppf(0.975, 31) * np.std(r20, ddof=1) / np.sqrt(32)
  const SampleStats s = SummarizeSample(kR20);
  EXPECT_EQ(s.n, 32);
  ExpectRel(*s.mean, 3.2786900000000001);
  ExpectRel(*s.stddev, 0.0017600000000000035);
  ExpectRel(*s.ci_half_width, 0.00063454766683794159);
  ExpectRel(*s.CiLow(), 3.2786900000000001 - 0.00063454766683794159);
}

TEST(SampleStatsTest, SmallSampleCi) {
  // a = [3.2811, 3.2795, 3.2820]; stats.t.ppf(0.975, 2) * np.std(a, ddof=1) / np.sqrt(3)
  const SampleStats s = SummarizeSample(kSmallA);
  ExpectRel(*s.mean, 3.2808666666666668);
  ExpectRel(*s.stddev, 0.0012662279942147986);
  ExpectRel(*s.ci_half_width, 0.0031454847122212542);
}

TEST(SampleStatsTest, DegenerateSizes) {
  const SampleStats empty = SummarizeSample({});
  EXPECT_EQ(empty.n, 0);
  EXPECT_FALSE(empty.mean || empty.stddev || empty.ci_half_width || empty.CiLow());
  const std::vector<double> one = {3.27};
  const SampleStats single = SummarizeSample(one);
  EXPECT_EQ(*single.mean, 3.27);
  EXPECT_FALSE(single.stddev || single.ci_half_width || single.CiHigh());
  const std::vector<double> same(5, 0.1);  // 5 * 0.1 / 5 would not round-trip exactly
  const SampleStats flat = SummarizeSample(same);
  EXPECT_EQ(*flat.mean, 0.1);
  EXPECT_EQ(*flat.stddev, 0.0);
  EXPECT_EQ(*flat.ci_half_width, 0.0);
}

TEST(WelchTest, SmallGroups) {
  // r = stats.ttest_ind(a, b, equal_var=False); va = np.var(a, ddof=1)/len(a); vb likewise;
  // df = (va+vb)**2/(va**2/(len(a)-1) + vb**2/(len(b)-1)); half = stats.t.ppf(0.975,
  // df)*np.sqrt(va+vb)
  const auto r = WelchTest(kSmallA, kSmallB);
  ASSERT_TRUE(r);
  ExpectRel(r->t, 2.0711054756109366);
  ExpectRel(r->p_value, 0.12343300178380778);
  ExpectRel(r->df, 3.2364691182446825);
  ExpectRel(r->difference, 0.0017266666666673203, 1e-8);
  ExpectRel(r->ci_half_width, 0.0025468189522697567);
}

TEST(WelchTest, UnequalVariancesInMs) {
  // Same formulas, ta = [150100, 149800, 151200, 148900, 150500, 149700],
  // tb = [152000, 147000, 155000, 149000]
  const std::vector<double> ta = {150100, 149800, 151200, 148900, 150500, 149700};
  const std::vector<double> tb = {152000, 147000, 155000, 149000};
  const auto r = WelchTest(ta, tb);
  ASSERT_TRUE(r);
  ExpectRel(r->t, -0.40292634018304968);
  ExpectRel(r->p_value, 0.71243023912745285);
  ExpectRel(r->df, 3.1992729652974954);
  ExpectRel(r->difference, -716.66666666665697);
  ExpectRel(r->ci_half_width, 5466.1477448276128);
}

TEST(WelchTest, DegenerateInputs) {
  const std::vector<double> one = {3.28};
  EXPECT_FALSE(WelchTest(one, kSmallB));
  EXPECT_FALSE(WelchTest(kSmallA, {}));
  const std::vector<double> flat(4, 3.2801);
  const auto same = WelchTest(flat, flat);  // identical groups: p = 1, not NaN
  ASSERT_TRUE(same);
  EXPECT_EQ(same->t, 0.0);
  EXPECT_EQ(same->p_value, 1.0);
  EXPECT_EQ(same->ci_half_width, 0.0);
  const std::vector<double> flat_low(3, 3.2790);
  const auto apart = WelchTest(flat_low, flat);  // noise-free and different: p = 0
  ASSERT_TRUE(apart);
  EXPECT_EQ(apart->p_value, 0.0);
  EXPECT_EQ(apart->t, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(apart->df, 5.0);
  // One zero-variance side is an ordinary Welch test (df = nb - 1).
  const auto half_flat = WelchTest(flat, kSmallB);
  ASSERT_TRUE(half_flat);
  ExpectRel(half_flat->df, 4.0);
  EXPECT_TRUE(std::isfinite(half_flat->p_value));
}

// pa/pb: seeds 0..5 of a variant and the baseline.
const std::vector<double> kPairA = {3.2801, 3.2795, 3.2810, 3.2788, 3.2799, 3.2806};
const std::vector<double> kPairB = {3.2812, 3.2800, 3.2819, 3.2797, 3.2811, 3.2809};

TEST(PairedTest, MatchesTtestRel) {
  // r = stats.ttest_rel(pa, pb); d = np.subtract(pa, pb);
  // half = stats.t.ppf(0.975, 5) * d.std(ddof=1) / np.sqrt(6)
  const auto r = PairedTest(kPairA, kPairB);
  ASSERT_TRUE(r);
  ExpectRel(r->t, -5.7350162126078006);
  ExpectRel(r->p_value, 0.0022575225715793018);
  ExpectRel(r->df, 5.0);
  ExpectRel(r->difference, -0.00081666666666653975, 1e-8);
  ExpectRel(r->ci_half_width, 0.00036605101399480146);
  EXPECT_FALSE(PairedTest(kPairA, kSmallB));            // lengths differ
  EXPECT_EQ(PairedTest(kPairA, kPairA)->p_value, 1.0);  // identical pairs
}

TEST(OneSampleTest, Alternatives) {
  // stats.ttest_1samp(a, 3.28, alternative='less') and b with 'less', 'greater', 'two-sided'
  ExpectRel(OneSampleTest(kSmallA, 3.28, Alternative::kLess)->p_value, 0.82120803721989233);
  ExpectRel(OneSampleTest(kSmallA, 3.28, Alternative::kLess)->t, 1.1854979567281527);
  ExpectRel(OneSampleTest(kSmallB, 3.28, Alternative::kLess)->p_value, 0.049212318797749573);
  ExpectRel(OneSampleTest(kSmallB, 3.28, Alternative::kGreater)->p_value, 0.95078768120225043);
  ExpectRel(OneSampleTest(kSmallB, 3.28)->p_value, 0.098424637595499145);
  ExpectRel(OneSampleTest(kSmallB, 3.28)->t, -2.1459800525764088);
}

TEST(OneSampleTest, ZeroVarianceDecidesBySign) {
  const std::vector<double> below(4, 3.279), at(4, 3.28), above(4, 3.281);
  EXPECT_EQ(OneSampleTest(below, 3.28, Alternative::kLess)->p_value, 0.0);
  EXPECT_EQ(OneSampleTest(above, 3.28, Alternative::kLess)->p_value, 1.0);
  EXPECT_EQ(OneSampleTest(at, 3.28, Alternative::kLess)->p_value, 1.0);
  EXPECT_EQ(OneSampleTest(above, 3.28, Alternative::kGreater)->p_value, 0.0);
  EXPECT_EQ(OneSampleTest(above, 3.28)->p_value, 0.0);
}

TEST(RecordRuleTest, R20Passes) {
  // stats.ttest_1samp(r20, 3.28, alternative='less')
  const RecordRuleResult r = CheckRecordRule(kR20);
  EXPECT_EQ(r.n, 32);
  ASSERT_TRUE(r.test);
  ExpectRel(r.test->t, -4.2104994697916522);
  ExpectRel(r.test->p_value, 0.00010141557770838503);
  EXPECT_TRUE(r.passes);
  EXPECT_FALSE(r.underpowered);
}

TEST(RecordRuleTest, FailsAndUnderpowered) {
  EXPECT_FALSE(CheckRecordRule(kSmallB).passes);  // p = 0.0492 > 0.01
  const std::vector<double> one = {3.20};
  const RecordRuleResult single = CheckRecordRule(one);
  EXPECT_TRUE(single.underpowered);
  EXPECT_FALSE(single.passes);
  EXPECT_EQ(*single.mean_val_loss, 3.20);
  EXPECT_FALSE(CheckRecordRule({}).mean_val_loss);
}

TEST(HolmTest, MatchesHandComputedHolm) {
  // def holm(p):
  //     m = len(p); order = sorted(range(m), key=lambda i: p[i]); out = [0]*m; run = 0
  //     for k, i in enumerate(order): run = max(run, min(1, (m-k)*p[i])); out[i] = run
  //     return out
  // holm([0.01, 0.04, 0.03, 0.005, 0.2, 0.04])
  const std::vector<double> adjusted = HolmAdjust({0.01, 0.04, 0.03, 0.005, 0.2, 0.04});
  const std::vector<double> expected = {0.05, 0.12, 0.12, 0.03, 0.2, 0.12};
  ASSERT_EQ(adjusted.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) ExpectRel(adjusted[i], expected[i]);
  EXPECT_TRUE(HolmAdjust({}).empty());
  EXPECT_EQ(HolmAdjust({0.6, 0.7})[0], 1.0);  // capped
}

std::vector<RunOutcome> Runs(const std::vector<double>& losses, int first_seed = 0) {
  std::vector<RunOutcome> runs;
  for (size_t i = 0; i < losses.size(); ++i) {
    RunOutcome r;
    r.seed = first_seed + static_cast<int>(i);
    r.final_val_loss = losses[i];
    r.reached_target = losses[i] <= 3.28;
    if (r.reached_target) r.time_to_target_ms = 150000.0 + 1000.0 * static_cast<double>(i);
    r.mean_step_ms = 85.0;
    runs.push_back(r);
  }
  return runs;
}

TEST(VariantStatsTest, UnreachedRunsCountButDoNotEnterTimes) {
  const std::vector<RunOutcome> runs = Runs({3.279, 3.285, 3.278, 3.290});
  const VariantStats s = SummarizeVariant(runs);
  EXPECT_EQ(s.n, 4);
  EXPECT_EQ(s.n_reached, 2);
  EXPECT_EQ(*s.reached_fraction, 0.5);
  EXPECT_EQ(s.final_val_loss.n, 4);
  EXPECT_EQ(s.time_to_target_ms.n, 2);
  EXPECT_EQ(*s.time_to_target_ms.mean, 151000.0);  // seeds 0 and 2
  EXPECT_EQ(*s.mean_step_ms.mean, 85.0);
}

TEST(VariantStatsTest, NoRunReachedAndNoRuns) {
  const VariantStats none = SummarizeVariant(Runs({3.30, 3.31}));
  EXPECT_EQ(none.n_reached, 0);
  EXPECT_EQ(*none.reached_fraction, 0.0);
  EXPECT_FALSE(none.time_to_target_ms.mean);
  const VariantStats empty = SummarizeVariant({});
  EXPECT_FALSE(empty.reached_fraction);
}

TEST(CompareTest, PairedWhenSeedsMatch) {
  // Welch on pa vs pb (formulas as in WelchTest.SmallGroups): p = 0.10724300510884423,
  // half = 0.0010284111488081057; ttest_rel: p = 0.0022575225715793018.
  const auto variant = Runs(kPairA), baseline = Runs(kPairB);
  const MetricComparison c = CompareMetric(variant, baseline, Metric::kFinalValLoss);
  ASSERT_TRUE(c.welch && c.paired);
  ExpectRel(c.welch->p_value, 0.10724300510884423);
  ExpectRel(c.welch->ci_half_width, 0.0010284111488081057);
  ExpectRel(c.paired->p_value, 0.0022575225715793018);
  EXPECT_FALSE(c.underpowered);  // 6 runs a side; the CI straddling 0 is not a power problem
  const MetricComparison shifted =
      CompareMetric(Runs(kPairA, 100), baseline, Metric::kFinalValLoss);
  EXPECT_FALSE(shifted.paired);  // different seeds: no pairing
}

TEST(CompareTest, UnderpoweredWithOneRun) {
  const MetricComparison c = CompareMetric(Runs({3.27}), Runs(kPairB), Metric::kFinalValLoss);
  EXPECT_FALSE(c.welch);
  EXPECT_TRUE(c.underpowered);
  ASSERT_TRUE(c.difference);
}

TEST(CompareTest, UnderpoweredBelowThreeRunsASide) {
  const std::vector<double> two = {3.2790, 3.2801};
  const MetricComparison c = CompareMetric(Runs(two), Runs(kPairB), Metric::kFinalValLoss);
  ASSERT_TRUE(c.welch);         // a test exists at n = 2 ...
  EXPECT_TRUE(c.underpowered);  // ... but is too weak to judge
  EXPECT_FALSE(CompareMetric(Runs(kSmallA), Runs(kPairB), Metric::kFinalValLoss).underpowered);
}

TEST(VariantStatsTest, AllReached) {
  const VariantStats s = SummarizeVariant(Runs({3.270, 3.275, 3.279}));
  EXPECT_EQ(s.n_reached, 3);
  EXPECT_EQ(*s.reached_fraction, 1.0);
  EXPECT_EQ(s.time_to_target_ms.n, 3);
  EXPECT_EQ(*s.time_to_target_ms.mean, 151000.0);
}

TEST(CompareTest, SweepHolmOverAblationsWithATest) {
  const auto baseline = Runs(kPairB);
  const std::vector<std::vector<RunOutcome>> ablations = {Runs(kPairA), Runs({3.27}),
                                                          Runs(kSmallA)};
  const std::vector<VariantComparison> out = CompareSweep(baseline, ablations);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out[1].final_val_loss.welch_p_holm);
  const double p0 = out[0].final_val_loss.welch->p_value;
  const double p2 = out[2].final_val_loss.welch->p_value;
  const std::vector<double> expected = HolmAdjust({p0, p2});
  EXPECT_EQ(*out[0].final_val_loss.welch_p_holm, expected[0]);
  EXPECT_EQ(*out[2].final_val_loss.welch_p_holm, expected[1]);
}

}  // namespace
}  // namespace ablate
