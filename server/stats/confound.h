// The confound check (DESIGN §7): variants that do the same work per step (they differ from the
// baseline only in knobs that leave a step's computation alone, trainer/config/knob_schema.h
// StepWork) must have the same ms/step. When a one-way ANOVA says their ms/step differ, the
// machine's speed changed during the sweep (other load, a slower node, throttling), so no time
// difference can be credited to an ablation; steps to target is then the trustworthy measure.
// Pure functions.
#ifndef ABLATE_SERVER_STATS_CONFOUND_H_
#define ABLATE_SERVER_STATS_CONFOUND_H_

#include <optional>
#include <string>
#include <vector>

namespace ablate {

// Significance level of the confound check. Stricter than the verdicts' 0.05: calling a sweep
// confounded throws away every time verdict, so it takes clear evidence.
inline constexpr double kConfoundAlpha = 0.01;

// One-way ANOVA F test of equal group means (scipy.stats.f_oneway). df_between = k - 1,
// df_within = N - k. Zero within-group variance: F = +infinity and p = 0 when the group means
// differ, F = 0 and p = 1 when they do not (scipy gives NaN or inf there).
struct AnovaResult {
  double f = 0.0;
  double df_between = 0.0;
  double df_within = 0.0;
  double p_value = 1.0;
};

// nullopt with fewer than 2 non-empty groups or N - k < 1. Empty groups are ignored.
std::optional<AnovaResult> OneWayAnova(const std::vector<std::vector<double>>& groups);

// The ms/step of one variant that does the baseline's work (the baseline itself included).
struct SameWorkGroup {
  std::string variant;
  std::vector<double> ms_per_step;
  // In the check only because the researcher declared it (a script ablation's `same_work:
  // true`): the message names it "(declared same work)", since the verdict then rests on that
  // declaration rather than on a diff ablate could read.
  bool declared = false;
};

struct ConfoundCheck {
  // Variants tested: the same-work groups with at least 2 values each (names only).
  std::vector<std::string> variants;
  std::optional<AnovaResult> test;  // absent when fewer than 2 groups qualify
  bool confounded = false;          // test->p_value < kConfoundAlpha
  // (largest - smallest group mean) / smallest group mean, e.g. 0.86 for 109 vs 203 ms.
  std::optional<double> relative_spread;
  // One sentence for readers: what was tested and what it found.
  std::string message;
};

ConfoundCheck CheckConfound(const std::vector<SameWorkGroup>& groups);

}  // namespace ablate

#endif  // ABLATE_SERVER_STATS_CONFOUND_H_
