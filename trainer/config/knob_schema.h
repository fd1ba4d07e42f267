// The one source of truth for training knobs (DESIGN §6.2): every knob's name, type, default,
// allowed range and one-line doc, plus the canonical form of a config and its hash.
// Sweep validation in the coordinator, the trainer's flags and `ablate presets` all read this.
#ifndef ABLATE_TRAINER_CONFIG_KNOB_SCHEMA_H_
#define ABLATE_TRAINER_CONFIG_KNOB_SCHEMA_H_

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

enum class KnobType { kInt, kFloat, kBool, kChoice, kIntList, kFloatList };

std::string_view KnobTypeName(KnobType type);

// One trainer knob. Names are dotted for grouped knobs (`muon.lr`, `adam.eps`); the canonical
// config is a flat JSON object keyed by these names.
struct KnobSpec {
  std::string_view name;
  KnobType type;
  nlohmann::json default_value;
  double min = 0;  // inclusive bounds for numbers and for each list element
  double max = 0;
  std::vector<std::string_view> choices;  // kChoice only
  size_t list_size = 0;                   // kFloatList: exact length when > 0
  std::string_view doc;
};

// Every knob, in a stable documentation order.
std::span<const KnobSpec> AllKnobs();

// nullptr when `name` is not a knob.
const KnobSpec* FindKnob(std::string_view name);

// Up to `limit` knob names closest to `name` by edit distance, best first (for "did you mean").
std::vector<std::string> ClosestKnobNames(std::string_view name, size_t limit = 3);

// Checks one value against its knob: type, range, choices. Integral floats are accepted for ints
// and ints for floats; the returned value has the knob's own JSON type.
Result<nlohmann::json> ValidateKnobValue(const KnobSpec& knob, const nlohmann::json& value);

// Parses the text of `--set k=v` (or a CLI argument) into a value of the knob's type:
// numbers, true/false, a choice name, or comma-separated lists.
Result<nlohmann::json> ParseKnobText(const KnobSpec& knob, std::string_view text);

// Flattens nested objects ({"muon": {"lr": 1}} -> {"muon.lr": 1}), rejects unknown knobs (with
// suggestions) and bad values, fills every default, and checks cross-knob rules (heads × head_dim
// = model_dim, batch divisibility, ...). The result has every knob, keys sorted.
Result<nlohmann::json> CanonicalizeConfig(const nlohmann::json& partial);

// Applies `overrides` (flat or nested, validated) on top of a canonical config, then
// re-canonicalises.
Result<nlohmann::json> ApplyOverrides(const nlohmann::json& canonical,
                                      const nlohmann::json& overrides);

// Canonical JSON text: compact, keys sorted, numbers as nlohmann prints them.
std::string CanonicalJson(const nlohmann::json& canonical);

// Hex SHA-256 of CanonicalJson(canonical). Two runs with the same hash and seed are the same run;
// `seed` is excluded from the hash so that the seeds of one variant share it.
std::string ConfigHash(const nlohmann::json& canonical);

// A short hex fingerprint of the knob table (names, types, defaults, ranges): two trainers with
// the same fingerprint accept and mean the same configs.
std::string KnobSchemaFingerprint();

// Knob-by-knob differences: {"knob": {"from": a, "to": b}} for every knob where they differ.
nlohmann::json ConfigDiff(const nlohmann::json& from, const nlohmann::json& to);

}  // namespace ablate

#endif  // ABLATE_TRAINER_CONFIG_KNOB_SCHEMA_H_
