// Reads one `set:` block of a sweep spec (baseline or ablation) into flat, validated knob
// overrides. Keys are knob names, dotted (`muon.lr: 0.05`) or nested (`muon: {lr: 0.05}`);
// both spellings give the same result.
#ifndef ABLATE_SERVER_SWEEP_KNOB_SET_READER_H_
#define ABLATE_SERVER_SWEEP_KNOB_SET_READER_H_

#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/spec/spec_errors.h"

namespace ablate {

// Knob overrides from one `set:` map, each value already of its knob's JSON type and within
// range. Cross-knob rules (n_head × head_dim = model_dim, ...) are checked later, on the whole
// config.
struct KnobSet {
  nlohmann::json values = nlohmann::json::object();  // dotted knob name -> value
  std::map<std::string, SpecPosition> positions;     // dotted knob name -> where its key is
  SpecPosition position;                             // of the `set` node itself
  std::string path;                                  // "ablations[2].set"
  bool ok = true;                                    // false when any entry was rejected

  // The knob of this set to blame for a config error: the error's own key when this set names
  // it, else the first knob of this set that the message names (a cross-knob rule such as
  // "model_dim (768) must equal n_head (5) * head_dim (128)" blames n_head when only n_head was
  // set), else "" (blame the set as a whole).
  std::string Blame(std::string_view error_key, std::string_view message) const;
  // Where `knob` is named ("" or a knob not in the set: the set itself).
  SpecPosition PositionFor(std::string_view knob) const;
  std::string PathFor(std::string_view knob) const;
};

// Reads `node` (a map; a missing node gives an empty set). Unknown knobs (with the closest
// names), values of the wrong type or out of range, a knob named twice, and a non-map node are
// added to `errors` with the position of the offending key or value, and clear `ok`.
KnobSet ReadKnobSet(const YAML::Node& node, std::string_view path, SpecErrors* errors);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_KNOB_SET_READER_H_
