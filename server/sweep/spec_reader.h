// Reads a parsed YAML sweep spec into typed fields, checking every key, type and range that can
// be checked without building configs. Config-level checks (cross-knob rules, identical or
// no-op variants, run counts) belong to SweepExpander.
#ifndef ABLATE_SERVER_SWEEP_SPEC_READER_H_
#define ABLATE_SERVER_SWEEP_SPEC_READER_H_

#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/decompose/decompose_spec.h"
#include "common/spec/spec_errors.h"
#include "server/sweep/knob_set_reader.h"
#include "server/sweep/script_spec.h"
#include "trainer/config/presets.h"

namespace ablate {

// One entry of `ablations:`.
struct AblationSpec {
  std::string name;
  KnobSet set;
  SpecPosition position;  // of the entry
  std::string path;       // "ablations[2]"
  ScriptSettings script;  // script keys (issue 14); any() is false for a knob ablation
  // `same_work: true|false` (sweep_keys.h kAblationEntryKeys; script ablations only), and where.
  std::optional<bool> same_work;
  SpecPosition same_work_position;
};

// One key of `grid:`: a knob and the values it takes, validated, in spec order.
struct GridAxis {
  std::string knob;
  std::vector<nlohmann::json> values;
  std::vector<std::string> labels;  // each value as written, for variant names
  SpecPosition position;            // of the key
  std::string path;                 // "grid.muon.lr"
};

// The most frequent checkpoints a spec may ask for (`checkpoint_every:`).
inline constexpr int64_t kMinCheckpointEveryMs = 1000;

// The typed content of a spec. Fields keep their defaults where the spec omits them or where
// they were rejected (the error is in SpecErrors then).
struct ParsedSpec {
  // Each top-level key the spec gives (sweep_keys.h), at the key itself.
  std::map<std::string, SpecPosition> key_positions;
  std::string name;
  std::string preset;  // empty: schema defaults only
  SpecPosition preset_position;
  Scale scale = Scale::kFull;
  KnobSet baseline_set;
  ScriptSettings baseline_script;  // any(): the baseline runs a script (script_spec.h)
  bool include_baseline = true;
  SpecPosition include_baseline_position;
  std::optional<double> target_val_loss;
  SpecPosition target_position;
  int seeds = 1;      // fixed seeds, or the most with sequential seeds
  int seeds_min = 0;  // sequential seeds: the fewest; 0 = fixed
  SpecPosition seeds_position;
  std::optional<int64_t> order_seed;  // empty: DefaultOrderSeed of the spec text
  int gpus_per_run = 1;
  int priority = 0;
  int max_concurrent = 0;
  int max_attempts = 3;
  std::optional<std::string> dataset;
  std::string pool;  // "" = any worker outside a pool
  int64_t checkpoint_every_ms = 0;  // `checkpoint_every:`; 0 = no checkpoints
  std::vector<std::string> tags;
  std::vector<AblationSpec> ablations;
  SpecPosition ablations_position;
  std::vector<GridAxis> grid;
  SpecPosition grid_position;
  // `decompose:` (common/decompose/decompose_spec.h): the variants come from the diff of two
  // scripts.
  std::optional<DecomposeSpec> decompose;
};

// Reads `root` (the spec's single YAML document). Every problem is added to `errors`.
ParsedSpec ReadSpec(const YAML::Node& root, SpecErrors* errors);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_SPEC_READER_H_
