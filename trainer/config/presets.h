// Named recipes (presets) for the seed-era speedrun records, and the scales that shrink a recipe
// while keeping every feature flag. Values come from reference/record-presets.md.
#ifndef ABLATE_TRAINER_CONFIG_PRESETS_H_
#define ABLATE_TRAINER_CONFIG_PRESETS_H_

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "trainer/config/result.h"

namespace ablate {

struct Preset {
  std::string_view name;
  std::string_view record;   // e.g. "r20 Sub3Min (01/16/25, 2.992 min)"
  std::string_view doc;      // what the record introduced
  std::string_view dataset;  // dataset the full-scale recipe trains on
  nlohmann::json overrides;  // knobs that differ from the schema defaults
};

enum class Scale { kFull, kSmall, kTiny };

std::span<const Preset> AllPresets();
const Preset* FindPreset(std::string_view name);

Result<Scale> ParseScale(std::string_view name);
std::string_view ScaleName(Scale scale);

// Shrinks a canonical config to `scale`: model, batch, sequence, steps, windows and evaluation
// shrink in proportion; every feature flag (softcap, U-Net, value embeds, ...) is kept. `tiny`
// also switches to the byte-level vocabulary of `ablate-data encode` (vocab 512, BOS 256) so that
// it trains in seconds on a laptop CPU. `full` returns the config unchanged.
Result<nlohmann::json> ApplyScale(const nlohmann::json& canonical, Scale scale);

// The canonical config of `preset` at `scale`.
Result<nlohmann::json> PresetConfig(std::string_view preset, Scale scale);

}  // namespace ablate

#endif  // ABLATE_TRAINER_CONFIG_PRESETS_H_
