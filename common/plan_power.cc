// Noncentral-t power and the seed count search; see plan_power.h.
#include "common/plan_power.h"

#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

namespace ablate {

double TwoSampleTPower(int n, double effect_sd, double alpha) {
  const double df = 2.0 * n - 2.0;
  const double crit = boost::math::quantile(
      boost::math::complement(boost::math::students_t(df), alpha / 2.0));
  const boost::math::non_central_t dist(df, std::fabs(effect_sd) * std::sqrt(n / 2.0));
  return boost::math::cdf(boost::math::complement(dist, crit)) + boost::math::cdf(dist, -crit);
}

std::optional<int> SeedsForPower(double effect_sd, double power, double alpha) {
  if (effect_sd == 0.0) return std::nullopt;
  // Power rises with n, so a doubling search then bisection finds the first n that reaches it.
  int lo = 2, hi = 2;
  while (TwoSampleTPower(hi, effect_sd, alpha) < power) {
    if (hi >= kPlanMaxSeeds) return std::nullopt;
    lo = hi;
    hi = std::min(kPlanMaxSeeds, hi * 2);
  }
  if (TwoSampleTPower(lo, effect_sd, alpha) >= power) return lo;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (TwoSampleTPower(mid, effect_sd, alpha) >= power ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace ablate
