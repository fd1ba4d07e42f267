// Holm step-down adjustment.
#include "server/stats/holm.h"

#include <algorithm>
#include <numeric>

namespace ablate {

std::vector<double> HolmAdjust(const std::vector<double>& p_values) {
  const size_t m = p_values.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> adjusted(m);
  double running_max = 0.0;
  for (size_t rank = 0; rank < m; ++rank) {
    const double scaled = static_cast<double>(m - rank) * p_values[order[rank]];
    running_max = std::max(running_max, std::min(1.0, scaled));
    adjusted[order[rank]] = running_max;
  }
  return adjusted;
}

}  // namespace ablate
