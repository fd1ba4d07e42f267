// Config resolution for ablate-train: preset → file → --set, all through the knob schema.
#include "trainer/tools/run_config_builder.h"

#include <fstream>

#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"

namespace ablate {
namespace {

using J = nlohmann::json;

Result<J> Base(const RunConfigSources& s) {
  Result<Scale> scale = ParseScale(s.scale);
  if (!scale.ok()) return scale.error();
  if (!s.preset.empty()) return PresetConfig(s.preset, *scale);
  Result<J> defaults = CanonicalizeConfig(J::object());
  if (!defaults.ok()) return defaults;
  return ApplyScale(*defaults, *scale);
}

Result<J> ReadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{"cannot read config file " + path, "config"};
  try {
    return J::parse(in);
  } catch (const J::exception& e) {
    return Error{"config file " + path + " is not valid JSON: " + e.what(), "config"};
  }
}

Result<J> ParseSets(const std::vector<std::string>& sets) {
  J overrides = J::object();
  for (const std::string& kv : sets) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) return Error{"--set expects knob=value, got '" + kv + "'", kv};
    std::string name = kv.substr(0, eq);
    const KnobSpec* knob = FindKnob(name);
    if (knob == nullptr) {
      std::string hint;
      for (const std::string& c : ClosestKnobNames(name)) hint += (hint.empty() ? "" : ", ") + c;
      return Error{"unknown knob '" + name + "'" + (hint.empty() ? "" : "; did you mean " + hint + "?"),
                   name};
    }
    Result<J> value = ParseKnobText(*knob, kv.substr(eq + 1));
    if (!value.ok()) return value.error();
    overrides[name] = *value;
  }
  return overrides;
}

}  // namespace

Result<J> BuildRunConfig(const RunConfigSources& sources) {
  Result<J> config = Base(sources);
  if (!config.ok()) return config;
  if (!sources.config_file.empty()) {
    Result<J> file = ReadConfigFile(sources.config_file);
    if (!file.ok()) return file;
    config = ApplyOverrides(*config, *file);
    if (!config.ok()) return config;
  }
  Result<J> sets = ParseSets(sources.sets);
  if (!sets.ok()) return sets;
  return ApplyOverrides(*config, *sets);
}

}  // namespace ablate
