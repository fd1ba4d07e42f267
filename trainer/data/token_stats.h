// Token counts over one or more shards, for `ablate-data inspect` and the learning test's
// baseline (the unigram entropy a model must beat).
#ifndef ABLATE_TRAINER_DATA_TOKEN_STATS_H_
#define ABLATE_TRAINER_DATA_TOKEN_STATS_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace ablate {

class TokenStats {
 public:
  TokenStats() : counts_(65536, 0) {}

  void Add(std::span<const uint16_t> tokens);

  int64_t total() const { return total_; }
  int64_t count(uint16_t token) const { return counts_[token]; }
  int max_token() const;        // -1 when empty
  int64_t distinct() const;     // tokens seen at least once
  // Entropy of the empirical unigram distribution, -Σ p ln p, in nats per token (0 when empty).
  double EntropyNats() const;
  // Up to k (token, count) pairs, most frequent first, ties by smaller token.
  std::vector<std::pair<int, int64_t>> Top(int k) const;

 private:
  std::vector<int64_t> counts_;  // (65536,)
  int64_t total_ = 0;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_TOKEN_STATS_H_
