// Turns a ParsedSpec into the sweep, its variants and its runs: builds the baseline config
// (preset at scale, then `set`, then the sweep's target), applies each ablation and grid point,
// and checks what needs whole configs: cross-knob rules, variants that change nothing or are
// identical to another, an empty sweep, and the run limit.
#ifndef ABLATE_SERVER_SWEEP_SWEEP_EXPANDER_H_
#define ABLATE_SERVER_SWEEP_SWEEP_EXPANDER_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/code_snapshot.h"
#include "common/spec/spec_errors.h"
#include "server/core/model.h"
#include "server/sweep/spec_reader.h"

namespace ablate {

inline constexpr int64_t kMaxSweepRuns = 100000;

// A sweep expanded into variants and runs. Variants are in order baseline (when included),
// ablations in spec order, grid points in lexicographic product order (first grid key
// outermost); runs are variant-major, then seed 0 .. seeds-1, each with its dispatch rank
// (server/core/run_order.h; block = seed, shuffled by sweep.order_seed). Ids are 0: the store
// assigns them; Run::variant_id holds the index of the run's variant in `variants`.
//
// A grid point whose config is the baseline's (a grid around the baseline) is not a variant of its
// own: its runs would be the baseline's. It is merged with the baseline and `notes` says so. An
// ablation that changes nothing is still an error. Without a baseline (include_baseline: false)
// such a grid point is an ordinary variant.
struct ExpandedSweep {
  Sweep sweep;
  std::vector<Variant> variants;
  std::vector<Run> runs;
  // Script sweeps (script_expander.h): the code snapshots the variants name, by hash.
  std::map<std::string, Snapshot> snapshots;
  std::vector<std::string> notes;  // for the reader, e.g. which grid point merged
};

// Which trainer a sweep's variants run: the built-in one, or the researcher's script (a spec
// where the baseline or any ablation sets a script key; script_expander.h).
enum class SweepKind { kBuiltIn, kScript };
SweepKind KindOf(const ParsedSpec& spec);

// "k1=v1,k2=v2": the name of a grid point, from (knob, value as written) pairs in key order.
std::string FormatVariantName(const std::vector<std::pair<std::string, std::string>>& assignments);

// The config a run trains with: its variant's canonical config with `seed` set to the run's.
// REQUIRES: variant.config_json is a canonical config (as ExpandSweep produces).
nlohmann::json RunConfig(const Variant& variant, int seed);

// Expands `spec` (read without errors). On failure adds every problem found to `errors` and
// returns nullopt. `spec_yaml` is kept verbatim in the sweep. Deterministic: the same spec gives
// the same output, byte for byte. Both kinds of sweep take one path: only their variants are
// built per kind (a script sweep's by BuildScriptVariants with `uploads`, none when null); every
// sweep-level key (sweep_keys.h) is honoured in one place for both, or refused for a script sweep
// at the key's position with the reason.
std::optional<ExpandedSweep> ExpandSweep(const ParsedSpec& spec, std::string_view spec_yaml,
                                         SpecErrors* errors,
                                         const ScriptUploads* uploads = nullptr);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_SWEEP_EXPANDER_H_
