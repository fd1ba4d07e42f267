// The order in which a sweep's runs are dispatched (DESIGN §7): in blocks, block k holding seed k
// of every variant, the variants of each block in an order shuffled from the sweep's order seed.
// Anything that drifts during a sweep (other load, a slower node joining, thermal throttling) then
// falls on every variant alike instead of on the variants that happen to run last. Pure and
// deterministic: the same order seed gives the same order on every platform (own PRNG and shuffle,
// not std::shuffle, whose output the standard leaves to the library).
#ifndef ABLATE_SERVER_CORE_RUN_ORDER_H_
#define ABLATE_SERVER_CORE_RUN_ORDER_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace ablate {

// The variant indices 0..num_variants-1 in the order block `block` dispatches them: a
// Fisher-Yates shuffle driven by splitmix64 seeded from (order_seed, block).
// REQUIRES: num_variants >= 0, block >= 0.
std::vector<int> BlockPermutation(uint64_t order_seed, int block, int num_variants);

// The run's rank in the sweep's dispatch order: block * num_variants + the position of
// `variant_index` in BlockPermutation(order_seed, block, num_variants). The scheduler takes a
// sweep's queued runs in increasing rank (after priority), so block k never overtakes block k-1.
// The block of a run is its seed. REQUIRES: 0 <= variant_index < num_variants.
int64_t DispatchRank(uint64_t order_seed, int block, int variant_index, int num_variants);

// A sweep's order seed when its spec names none: a 53-bit FNV-1a hash of the spec text, so the
// same spec (also in a dry run) always gives the same order. 53 bits so that it survives JSON.
int64_t DefaultOrderSeed(std::string_view spec_text);

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_RUN_ORDER_H_
