// How many seeds a comparison needs (`ablate plan`): the power of the two-sided two-sample t-test
// with equal seeds per side, from the noncentral t distribution (Boost.Math), checked against
// scipy.stats.nct in tests/server/stats/stats_vs_scipy.py. Pure functions. In common/ because
// the coordinator's plan (server/compare/plan_queries.h) and `ablate decompose --dry-run` both
// use it.
#ifndef ABLATE_COMMON_PLAN_POWER_H_
#define ABLATE_COMMON_PLAN_POWER_H_

#include <optional>

namespace ablate {

inline constexpr double kPlanPower = 0.8;
inline constexpr double kPlanAlpha = 0.05;
inline constexpr int kPlanMaxSeeds = 10000;

// Power of the two-sided two-sample t-test at level `alpha` with n seeds per side (df = 2n - 2)
// to detect a true difference of `effect_sd` standard deviations:
// P(T > t_crit) + P(T < -t_crit), T noncentral t with noncentrality effect_sd * sqrt(n / 2).
// REQUIRES n >= 2.
double TwoSampleTPower(int n, double effect_sd, double alpha = kPlanAlpha);

// The fewest seeds per side (2 .. kPlanMaxSeeds) whose power reaches `power`; nullopt when even
// kPlanMaxSeeds does not (or effect_sd is 0).
std::optional<int> SeedsForPower(double effect_sd, double power = kPlanPower,
                                 double alpha = kPlanAlpha);

}  // namespace ablate

#endif  // ABLATE_COMMON_PLAN_POWER_H_
