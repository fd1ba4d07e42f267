// t-tests on top of Boost.Math's Student t distribution.
#include "common/stats/t_tests.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "common/stats/sample_stats.h"

namespace ablate {
namespace {

double PValue(double t, double df, Alternative alternative) {
  const boost::math::students_t dist(df);
  switch (alternative) {
    case Alternative::kLess:
      return boost::math::cdf(dist, t);
    case Alternative::kGreater:
      return boost::math::cdf(boost::math::complement(dist, t));
    case Alternative::kTwoSided:
      break;
  }
  return std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(dist, std::fabs(t))));
}

// The noise-free case: the sign of the difference alone decides (see the header).
TTestResult ZeroErrorResult(double difference, double df, Alternative alternative) {
  TTestResult r;
  r.df = df;
  r.difference = difference;
  if (difference == 0.0) return r;  // t = 0, p = 1
  const double inf = std::numeric_limits<double>::infinity();
  r.t = difference > 0 ? inf : -inf;
  const bool in_direction = alternative == Alternative::kTwoSided ||
                            (alternative == Alternative::kLess && difference < 0) ||
                            (alternative == Alternative::kGreater && difference > 0);
  r.p_value = in_direction ? 0.0 : 1.0;
  return r;
}

TTestResult FromStandardError(double difference, double se, double df, Alternative alternative) {
  if (se == 0.0) return ZeroErrorResult(difference, df, alternative);
  TTestResult r;
  r.t = difference / se;
  r.df = df;
  r.p_value = PValue(r.t, df, alternative);
  r.difference = difference;
  r.ci_half_width = StudentTCritical(df) * se;
  return r;
}

}  // namespace

std::optional<TTestResult> WelchTest(std::span<const double> a, std::span<const double> b,
                                     Alternative alternative) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const double na = static_cast<double>(a.size());
  const double nb = static_cast<double>(b.size());
  const double qa = SampleVariance(a) / na;  // squared standard error of mean(a)
  const double qb = SampleVariance(b) / nb;
  const double difference = SampleMean(a) - SampleMean(b);
  const double se2 = qa + qb;
  if (se2 == 0.0) return ZeroErrorResult(difference, na + nb - 2.0, alternative);
  const double df = se2 * se2 / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
  return FromStandardError(difference, std::sqrt(se2), df, alternative);
}

std::optional<TTestResult> PairedTest(std::span<const double> a, std::span<const double> b,
                                      Alternative alternative) {
  if (a.size() != b.size()) return std::nullopt;
  std::vector<double> differences(a.size());
  for (size_t i = 0; i < a.size(); ++i) differences[i] = a[i] - b[i];
  return OneSampleTest(differences, 0.0, alternative);
}

std::optional<TTestResult> OneSampleTest(std::span<const double> x, double mu,
                                         Alternative alternative) {
  if (x.size() < 2) return std::nullopt;
  const double n = static_cast<double>(x.size());
  const double se = std::sqrt(SampleVariance(x) / n);
  return FromStandardError(SampleMean(x) - mu, se, n - 1.0, alternative);
}

}  // namespace ablate
