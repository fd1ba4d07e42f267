// Holm–Bonferroni step-down correction for testing a sweep's ablations against one baseline.
#ifndef ABLATE_SERVER_STATS_HOLM_H_
#define ABLATE_SERVER_STATS_HOLM_H_

#include <vector>

namespace ablate {

// Holm-adjusted p-values, returned in the same order as `p_values`. With the m p-values sorted
// ascending p_(1) <= ... <= p_(m), adjusted p_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j)):
// monotone in the raw p, never below the raw p, capped at 1. Rejecting where adjusted p < alpha
// controls the family-wise error rate at alpha. Empty in, empty out. Inputs must lie in [0, 1].
std::vector<double> HolmAdjust(const std::vector<double>& p_values);

}  // namespace ablate

#endif  // ABLATE_SERVER_STATS_HOLM_H_
