// Unigram counts and their entropy.
#include "trainer/data/token_stats.h"

#include <algorithm>
#include <cmath>

namespace ablate {

void TokenStats::Add(std::span<const uint16_t> tokens) {
  for (uint16_t t : tokens) ++counts_[t];
  total_ += static_cast<int64_t>(tokens.size());
}

int TokenStats::max_token() const {
  for (int t = 65535; t >= 0; --t) {
    if (counts_[t] > 0) return t;
  }
  return -1;
}

int64_t TokenStats::distinct() const {
  return std::count_if(counts_.begin(), counts_.end(), [](int64_t c) { return c > 0; });
}

double TokenStats::EntropyNats() const {
  double h = 0;
  for (int64_t c : counts_) {
    if (c == 0) continue;
    double p = static_cast<double>(c) / static_cast<double>(total_);
    h -= p * std::log(p);
  }
  return h;
}

std::vector<std::pair<int, int64_t>> TokenStats::Top(int k) const {
  std::vector<std::pair<int, int64_t>> seen;
  for (int t = 0; t < 65536; ++t) {
    if (counts_[t] > 0) seen.emplace_back(t, counts_[t]);
  }
  std::stable_sort(seen.begin(), seen.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (static_cast<int>(seen.size()) > k) seen.resize(static_cast<size_t>(std::max(k, 0)));
  return seen;
}

}  // namespace ablate
