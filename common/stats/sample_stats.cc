// Sample mean, variance and the Student-t interval of the mean.
#include "common/stats/sample_stats.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

namespace ablate {
namespace {

bool AllEqual(std::span<const double> values) {
  return std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end();
}

}  // namespace

std::optional<double> SampleStats::CiLow() const {
  if (!mean || !ci_half_width) return std::nullopt;
  return *mean - *ci_half_width;
}

std::optional<double> SampleStats::CiHigh() const {
  if (!mean || !ci_half_width) return std::nullopt;
  return *mean + *ci_half_width;
}

double SampleMean(std::span<const double> values) {
  if (values.empty()) return 0.0;
  // Equal values: return one of them, so that zero-variance checks downstream are exact.
  if (AllEqual(values)) return values.front();
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double SampleVariance(std::span<const double> values) {
  if (values.size() < 2 || AllEqual(values)) return 0.0;
  const double mean = SampleMean(values);
  double sum_sq = 0.0;
  for (double v : values) sum_sq += (v - mean) * (v - mean);
  return sum_sq / static_cast<double>(values.size() - 1);
}

double StudentTCritical(double df, double level) {
  const boost::math::students_t dist(df);
  return boost::math::quantile(dist, 0.5 + level / 2.0);
}

SampleStats SummarizeSample(std::span<const double> values) {
  SampleStats s;
  s.n = static_cast<int>(values.size());
  if (s.n == 0) return s;
  s.mean = SampleMean(values);
  if (s.n < 2) return s;
  s.stddev = std::sqrt(SampleVariance(values));
  s.ci_half_width = StudentTCritical(s.n - 1) * *s.stddev / std::sqrt(static_cast<double>(s.n));
  return s;
}

}  // namespace ablate
