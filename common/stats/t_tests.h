// Student t-tests: Welch's unequal-variance two-sample test, the paired test and the one-sample
// test, each with the CI of the estimated difference. Pure functions over samples; values carry
// the caller's units (nats, ms) and so do `difference` and `ci_half_width`.
//
// Degenerate inputs never produce NaN:
//   * Fewer than 2 values in a sample (or unequal lengths for the paired test): std::nullopt —
//     there is no variance estimate, so no test. Callers report this as underpowered.
//   * Zero standard error (every sample has zero variance): the data carry no noise, so the sign
//     of the difference decides. difference == 0 -> t = 0, p = 1. Otherwise t = ±infinity and
//     p = 0 when the difference lies in the alternative's direction, p = 1 when it does not.
//     ci_half_width = 0. (scipy returns NaN here; this is the one documented deviation.)
#ifndef ABLATE_COMMON_STATS_T_TESTS_H_
#define ABLATE_COMMON_STATS_T_TESTS_H_

#include <optional>
#include <span>

namespace ablate {

enum class Alternative {
  kTwoSided,  // H1: mean != reference
  kLess,      // H1: mean < reference
  kGreater,   // H1: mean > reference
};

struct TTestResult {
  double t = 0.0;              // the t statistic (±infinity only with zero standard error)
  double df = 0.0;             // degrees of freedom (Welch–Satterthwaite for WelchTest)
  double p_value = 1.0;        // for the requested alternative, in [0, 1]
  double difference = 0.0;     // estimate: mean(a) - mean(b), mean(a - b), or mean(x) - mu
  double ci_half_width = 0.0;  // two-sided 95% CI of `difference` is difference ± this
};

// Welch's t-test of mean(a) - mean(b) (scipy.stats.ttest_ind(a, b, equal_var=False)).
// df = (va/na + vb/nb)^2 / ((va/na)^2/(na-1) + (vb/nb)^2/(nb-1)); with zero standard error,
// df = na + nb - 2. nullopt when a or b has fewer than 2 values.
std::optional<TTestResult> WelchTest(std::span<const double> a, std::span<const double> b,
                                     Alternative alternative = Alternative::kTwoSided);

// Paired t-test on a[i] - b[i] (scipy.stats.ttest_rel(a, b)); df = n - 1. nullopt when the
// lengths differ or n < 2. The caller is responsible for the pairing (same seed at index i).
std::optional<TTestResult> PairedTest(std::span<const double> a, std::span<const double> b,
                                      Alternative alternative = Alternative::kTwoSided);

// One-sample t-test of mean(x) against mu (scipy.stats.ttest_1samp(x, mu, alternative=...));
// df = n - 1. nullopt when n < 2.
std::optional<TTestResult> OneSampleTest(std::span<const double> x, double mu,
                                         Alternative alternative = Alternative::kTwoSided);

}  // namespace ablate

#endif  // ABLATE_COMMON_STATS_T_TESTS_H_
