// Blocked, shuffled dispatch order; see run_order.h.
#include "server/core/run_order.h"

#include <numeric>

namespace ablate {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): a full-period generator whose outputs are well mixed even
// for consecutive seeds, which (order_seed, block) pairs are.
uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, bound) without modulo bias (rejection of the short top range).
uint64_t Below(uint64_t& state, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t x;
  do {
    x = SplitMix64(state);
  } while (x >= limit);
  return x % bound;
}

}  // namespace

std::vector<int> BlockPermutation(uint64_t order_seed, int block, int num_variants) {
  std::vector<int> order(static_cast<size_t>(num_variants));
  std::iota(order.begin(), order.end(), 0);
  uint64_t state = order_seed;
  SplitMix64(state);
  state ^= static_cast<uint64_t>(block) * 0xD1B54A32D192ED03ull;
  for (int i = num_variants - 1; i > 0; --i) {
    const auto j = static_cast<int>(Below(state, static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

int64_t DispatchRank(uint64_t order_seed, int block, int variant_index, int num_variants) {
  const std::vector<int> order = BlockPermutation(order_seed, block, num_variants);
  int position = 0;
  while (order[position] != variant_index) ++position;
  return static_cast<int64_t>(block) * num_variants + position;
}

int64_t DefaultOrderSeed(std::string_view spec_text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : spec_text) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return static_cast<int64_t>(h & ((1ull << 53) - 1));
}

}  // namespace ablate
