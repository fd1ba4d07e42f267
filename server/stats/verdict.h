// The verdict of an ablation against the baseline in one word or two, from the statistics of
// variant_stats.h, and the paragraph that explains the method to a reader. Pure functions.
#ifndef ABLATE_SERVER_STATS_VERDICT_H_
#define ABLATE_SERVER_STATS_VERDICT_H_

#include <string>

#include "server/stats/variant_stats.h"

namespace ablate {

// Family-wise significance level of a verdict: Holm-adjusted Welch p across the sweep's ablations.
inline constexpr double kVerdictAlpha = 0.05;

// The verdict on one metric, first rule that applies:
//   "never reached"  time and steps: the variant has runs (n > 0) and none reached the target
//   "no data"        either side has no value of the metric
//   "underpowered"   comparison.underpowered (fewer than kMinRunsToTell values on a side)
//   DirectionWord    "faster"/"slower" (time), "fewer steps"/"more steps", "faster steps"/
//                    "slower steps" (ms/step), "better"/"worse" (loss):
//                    Holm-adjusted Welch p < kVerdictAlpha; the sign of the difference decides
//   "no difference"  otherwise: the test ran on enough runs and found nothing at that level
std::string MetricVerdict(const MetricComparison& comparison, Metric metric,
                          const VariantStats& variant);

// The word for a significant difference of `metric`: faster/slower (time), fewer/more steps,
// faster/slower steps (ms/step), better/worse (loss). `lower` = the variant's mean is lower.
std::string DirectionWord(Metric metric, bool lower);

// The time verdict when the confound check fails (confound.h): machine speed, not the ablation,
// may explain differences in time to target.
inline constexpr char kConfoundedWord[] = "confounded";
inline constexpr char kConfoundedTimeVerdict[] =
    "confounded: machine speed changed during the sweep; steps-to-target is the trustworthy "
    "measure";
// A variant's combined verdict when time is confounded: "confounded; steps: fewer steps", with a
// significant loss verdict appended (", worse").
std::string ConfoundedVerdict(const std::string& steps_verdict, const std::string& loss_verdict);

// The verdict on both metrics. If either metric is significant, its words, time first
// ("faster", "worse", "faster, worse"). Otherwise the more cautious of the two, in the order
// "never reached", "underpowered", "no difference", "no data" ("no data" only when both say so).
std::string CombinedVerdict(const std::string& time_verdict, const std::string& loss_verdict);

// Verdicts of a variant that is not compared: the baseline itself, and every variant of a sweep
// without a baseline (include_baseline: false).
inline constexpr char kBaselineVerdict[] = "baseline";
inline constexpr char kNoBaselineVerdict[] = "no baseline";
// An imported variant's time and ms/step against a sweep on other (or unsaid) hardware.
inline constexpr char kNotComparableVerdict[] = "time not comparable";

// One paragraph for readers: how runs that never reached the target enter the statistics, which
// tests run, and what the verdicts mean. `target_val_loss` in nats.
std::string ComparisonMethodText(double target_val_loss);

}  // namespace ablate

#endif  // ABLATE_SERVER_STATS_VERDICT_H_
