// Descriptive statistics of one sample: n, mean, sample standard deviation and the two-sided 95%
// Student-t confidence interval of the mean. Pure functions; units are whatever the caller's
// values carry (nats for val loss, ms for times).
#ifndef ABLATE_COMMON_STATS_SAMPLE_STATS_H_
#define ABLATE_COMMON_STATS_SAMPLE_STATS_H_

#include <optional>
#include <span>

namespace ablate {

// Confidence level used by every interval in server/stats.
inline constexpr double kConfidenceLevel = 0.95;

// The mean of a sample and how well it is known.
//   n = 0: every optional is empty.
//   n = 1: `mean` only; no standard deviation and no CI (there is no spread to estimate).
//   n >= 2: all set. Zero variance gives stddev = 0 and a zero-width CI [mean, mean].
struct SampleStats {
  int n = 0;
  std::optional<double> mean;
  std::optional<double> stddev;         // sample standard deviation (ddof = 1)
  std::optional<double> ci_half_width;  // t_{0.975, n-1} * stddev / sqrt(n)

  std::optional<double> CiLow() const;
  std::optional<double> CiHigh() const;
};

// Summarises `values`. Non-finite values are the caller's bug and are not filtered here.
SampleStats SummarizeSample(std::span<const double> values);

// Mean and sample variance (ddof = 1) computed in two passes. If all values are equal the
// variance is exactly 0 and the mean exactly that value (no rounding residue). Requires
// values.size() >= 1 for the mean and >= 2 for the variance (0 otherwise).
double SampleMean(std::span<const double> values);
double SampleVariance(std::span<const double> values);

// The two-sided critical value t such that P(|T_df| <= t) = level. Requires df > 0.
double StudentTCritical(double df, double level = kConfidenceLevel);

}  // namespace ablate

#endif  // ABLATE_COMMON_STATS_SAMPLE_STATS_H_
