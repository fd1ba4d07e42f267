// Builds the canonical config of one run from the command line's pieces: a preset at a scale
// (or the schema defaults), then a JSON config file, then --set overrides, each validated by the
// knob schema. Every error names the knob or file it is about.
#ifndef ABLATE_TRAINER_TOOLS_RUN_CONFIG_BUILDER_H_
#define ABLATE_TRAINER_TOOLS_RUN_CONFIG_BUILDER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

struct RunConfigSources {
  std::string preset;       // empty: schema defaults
  std::string scale = "full";
  std::string config_file;  // empty: none
  std::vector<std::string> sets;  // "knob=value"
};

Result<nlohmann::json> BuildRunConfig(const RunConfigSources& sources);

}  // namespace ablate

#endif  // ABLATE_TRAINER_TOOLS_RUN_CONFIG_BUILDER_H_
