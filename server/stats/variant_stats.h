// Per-variant summaries of a sweep's runs and their comparison against the baseline (DESIGN §7).
// Pure functions: the store adapter turns Run rows into RunOutcome values and the CLI/dashboard
// render the results. Units: val loss in nats, times in milliseconds.
//
// Runs that never reach the target. Time-to-target is the training time at the first validation
// with loss <= target. A run that never gets there has only a lower bound on that time (its final
// training time), so averaging it in as if it were a time-to-target would bias the mean
// downwards, and dropping it silently would hide that the variant fails. We do neither: time
// statistics (mean, CI, Welch/paired tests) are computed over reached runs only, and the reached
// count / fraction is reported beside them. A variant with a good time over 2 of 8 reached runs
// reads as exactly that. Final val loss statistics use every run that has a final val loss,
// reached or not.
#ifndef ABLATE_SERVER_STATS_VARIANT_STATS_H_
#define ABLATE_SERVER_STATS_VARIANT_STATS_H_

#include <optional>
#include <span>
#include <vector>

#include "common/stats/sample_stats.h"
#include "common/stats/t_tests.h"

namespace ablate {

// What the statistics need of one run (one variant × seed).
struct RunOutcome {
  int seed = 0;
  std::optional<double> final_val_loss;     // nats; empty if the run never validated
  bool reached_target = false;              // some validation had loss <= target
  std::optional<double> time_to_target_ms;  // training ms at that validation; used only if reached
  std::optional<double> steps_to_target;    // step of that validation; used only if reached
  std::optional<double> mean_step_ms;       // ms per training step
};

struct VariantStats {
  int n = 0;                               // runs given
  int n_reached = 0;                       // runs with reached_target
  std::optional<double> reached_fraction;  // n_reached / n; empty when n = 0
  SampleStats final_val_loss;              // nats, over runs that have a final val loss
  SampleStats time_to_target_ms;           // ms, over reached runs that have a time
  SampleStats steps_to_target;             // steps, over reached runs that have a target step
  SampleStats mean_step_ms;                // ms, over runs that have one
};

VariantStats SummarizeVariant(std::span<const RunOutcome> runs);

// Time to target splits into its two causes: steps to target (how many steps the variant needs)
// times ms per step (how fast each step is). Steps to target, like time, counts reached runs only;
// ms/step counts every run that reports it, reached or not (speed does not depend on reaching).
enum class Metric { kFinalValLoss, kTimeToTarget, kStepsToTarget, kMsPerStep };

// The values of `metric` that enter the statistics (see the file comment), in input order.
std::vector<double> MetricValues(std::span<const RunOutcome> runs, Metric metric);

// Fewest values of a metric on each side for a comparison to tell anything. With 2 runs a side
// the Welch test has at most 2 degrees of freedom (t critical 4.3 to 12.7), so only a difference
// many seed-standard-deviations wide could show; 3 is the floor below which we do not judge.
inline constexpr int kMinRunsToTell = 3;

// One metric of a variant against the baseline. difference = mean(variant) - mean(baseline)
// (negative is better for both metrics).
//
// underpowered is true when n is too small to tell: either side has fewer than kMinRunsToTell
// values of the metric. It does not depend on the outcome: a well-sampled comparison whose CI
// straddles 0 is "no difference", not underpowered (its CI says how large a difference could
// still hide).
struct MetricComparison {
  int n_variant = 0;
  int n_baseline = 0;
  std::optional<double> difference;    // set when both sides have at least 1 value
  std::optional<TTestResult> welch;    // two-sided; its ci_half_width is the CI of difference
  std::optional<TTestResult> paired;   // two-sided; only when seeds pair one to one
  std::optional<double> welch_p_holm;  // Welch p Holm-adjusted across the sweep (CompareSweep)
  bool underpowered = true;
};

// Compares `metric` of `variant` against `baseline`. The paired test is run when both sides'
// values come from the same set of distinct seeds, with the same count (n >= 2); values are
// matched by seed.
MetricComparison CompareMetric(std::span<const RunOutcome> variant,
                               std::span<const RunOutcome> baseline, Metric metric);

struct VariantComparison {
  MetricComparison final_val_loss;
  MetricComparison time_to_target_ms;
  MetricComparison steps_to_target;
  MetricComparison mean_step_ms;
};

// Compares every ablation against the baseline, in the given order, and fills welch_p_holm per
// metric (each of the four): Holm over the ablations whose Welch test exists (the others stay
// empty).
std::vector<VariantComparison> CompareSweep(std::span<const RunOutcome> baseline,
                                            const std::vector<std::vector<RunOutcome>>& ablations);

}  // namespace ablate

#endif  // ABLATE_SERVER_STATS_VARIANT_STATS_H_
