// The statistics of a decomposed record (issue 29): which of the changes between FROM and TO
// made it faster, and whether the parts add up. Pure functions over run outcomes; values carry
// the metric's units (ms for time and ms/step, steps for steps to target).
//
// Per change c and metric (time to target, steps to target, ms/step):
//   add-one-in     mean(FROM + c) - mean(FROM): what c does alone;
//   leave-one-out  mean(TO) - mean(TO - c): what c still does beside every other change.
// Each is a Welch test (variant_stats.h CompareMetric: a CI, and a paired test when seeds pair),
// Holm-corrected per metric across all 2k tests of the table.
// The interaction: total = mean(TO) - mean(FROM) against the sum of the add-one-in effects,
//   I = total - sum_c (mean(FROM + c) - mean(FROM))
//     = mean(TO) + (k - 1) mean(FROM) - sum_c mean(FROM + c),
// a linear contrast of independent means: its standard error is sqrt(sum w_i^2 s_i^2 / n_i) and
// its degrees of freedom Welch–Satterthwaite's, (sum q_i)^2 / sum q_i^2 / (n_i - 1) with
// q_i = w_i^2 s_i^2 / n_i (a two-group contrast is exactly the Welch test). I = 0 when the
// changes add up; I < 0 when together they save more time than their parts (synergy).
#ifndef ABLATE_SERVER_STATS_DECOMPOSITION_H_
#define ABLATE_SERVER_STATS_DECOMPOSITION_H_

#include <optional>
#include <span>
#include <vector>

#include "common/stats/t_tests.h"
#include "server/stats/variant_stats.h"

namespace ablate {

// One term of a linear contrast: weight × mean(values).
struct ContrastTerm {
  double weight = 0.0;
  std::span<const double> values;
};

// sum_i weight_i mean(values_i) tested against 0 (two-sided), with its 95% CI (see the file
// comment). nullopt when a term has fewer than 2 values. With zero standard error, as
// t_tests.h: t = 0 and p = 1 for a zero estimate, else t = ±inf and p = 0, ci_half_width 0.
std::optional<TTestResult> LinearContrast(const std::vector<ContrastTerm>& terms);

// A decomposition's runs by role; add_one_in[c] and leave_one_out[c] are change c's (two roles
// may name the same runs: with two changes, FROM + a is TO - b).
struct DecompositionRuns {
  std::span<const RunOutcome> from, to;
  std::vector<std::span<const RunOutcome>> add_one_in, leave_one_out;
};

struct MetricDecomposition {
  Metric metric = Metric::kTimeToTarget;
  // Per change; welch_p_holm set (Holm over this metric's add-one-in and leave-one-out tests).
  std::vector<MetricComparison> add_one_in, leave_one_out;
  std::optional<double> total;           // mean(TO) - mean(FROM)
  std::optional<double> sum_of_singles;  // sum of the add-one-in differences
  // The interaction contrast (difference = total - sum_of_singles); nullopt with fewer than 2
  // changes (one change has nothing to interact with) or a role with fewer than 2 values.
  std::optional<TTestResult> interaction;
  // A role has fewer than kMinRunsToTell values of the metric.
  bool interaction_underpowered = true;
};

// Time to target, steps to target and ms/step, in that order.
// REQUIRES: add_one_in.size() == leave_one_out.size().
std::vector<MetricDecomposition> Decompose(const DecompositionRuns& runs);

}  // namespace ablate

#endif  // ABLATE_SERVER_STATS_DECOMPOSITION_H_
