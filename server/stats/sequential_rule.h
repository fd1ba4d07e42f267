// Sequential seeds (DESIGN §7): `seeds: {min: 3, max: 16}` gives every variant `min` seeds, then
// adds one block (one more seed of every variant still open, and of the baseline) at a time until
// each ablation's time verdict is settled or it has `max` seeds.
//
// The rule: a group-sequential design with an alpha-spending boundary. After block n (n = min ..
// max seeds per side) the ablation is compared with the baseline by Welch's two-sided t-test on
// time to target over seeds 0..n-1 (reached runs, as in variant_stats.h). It is settled as
// faster/slower at the first look whose p is at or below that look's boundary, and as "no
// difference" when it reaches `max` without crossing. The boundaries spend the error rate as
// alpha * (n / max)^3 (an O'Brien-Fleming-like power family: strict early, when a few seeds say
// little, close to the fixed-design level at the end). Because the looks are correlated, the
// boundary of each look is calibrated by simulation: 40,000 sweeps with no true difference
// (normal times, equal variances, a fixed generator seed), each look's boundary set so that the
// share of simulated sweeps that first cross at or before it equals alpha * (n / max)^3. So the
// chance of any faster/slower verdict under no true difference is alpha however often we look.
//
// Error rates. alpha is kSequentialAlpha = 0.04 per sweep, split evenly (Bonferroni) across the
// sweep's ablations, which keeps the family-wise rate at or below the 5% the verdicts promise and
// leaves 1% for what the calibration assumes and real times may not give (normality, equal
// variances) and for its own Monte-Carlo error. Checked by simulation in
// tests/server/stats/sequential_rule_test.cc (2,000 sweeps under no difference and under a
// difference of one standard deviation, against a fixed 16-seed design).
//
// Pure functions; thread-safe (boundaries are computed once per design and cached).
#ifndef ABLATE_SERVER_STATS_SEQUENTIAL_RULE_H_
#define ABLATE_SERVER_STATS_SEQUENTIAL_RULE_H_

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/stats/variant_stats.h"

namespace ablate {

inline constexpr double kSequentialAlpha = 0.04;
inline constexpr double kSpendingExponent = 3.0;
inline constexpr int kCalibrationSweeps = 40000;

struct SequentialDesign {
  int min_seeds = 3;  // first look; >= 2
  int max_seeds = 16;
  double alpha = kSequentialAlpha;  // for this one comparison (kSequentialAlpha / ablations)
};

// The alpha of one ablation's comparison in a sweep with `ablations` ablations (Bonferroni).
double PerAblationAlpha(int ablations);

// Boundaries for looks n = min_seeds .. max_seeds (index n - min_seeds): settle when the Welch
// two-sided p at look n is <= boundary. Deterministic. REQUIRES 2 <= min_seeds <= max_seeds.
std::vector<double> SequentialBoundaries(const SequentialDesign& design);

struct SequentialDecision {
  bool settled = false;
  int seeds = 0;                  // the look (seeds per side) it settled at or was last seen at
  std::optional<double> p_value;  // Welch p at that look (absent: too few values to test)
  double boundary = 0.0;          // that look's boundary
  // "faster"/"slower" (crossed the boundary), "no difference" (reached max_seeds without
  // crossing), "open" (not settled yet).
  std::string verdict;
};

// The decision after seeds 0 .. blocks_done-1 of both sides have finished. Looks at every
// n = min_seeds .. min(blocks_done, max_seeds) in order, each over the runs with seed < n, so the
// answer is the same whenever it is asked again later (the first crossing stands). Before
// min_seeds blocks it is "open".
SequentialDecision DecideSequential(std::span<const RunOutcome> variant,
                                    std::span<const RunOutcome> baseline,
                                    const SequentialDesign& design, int blocks_done);

}  // namespace ablate

#endif  // ABLATE_SERVER_STATS_SEQUENTIAL_RULE_H_
