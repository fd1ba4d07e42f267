// A YAML value read as the value of a trainer knob (a sweep spec's `set:` and `grid:`): the
// bridge between the spec toolkit (common/spec/) and the knob schema (trainer/config/).
#ifndef ABLATE_SERVER_SWEEP_KNOB_YAML_H_
#define ABLATE_SERVER_SWEEP_KNOB_YAML_H_

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "trainer/config/knob_schema.h"

namespace ablate {

// A YAML value as a value of `knob`: scalars are read by the knob's type (`30` a number, `true`
// a bool, `relu2` a choice), lists become arrays; then ValidateKnobValue checks type, range and
// choices. On failure the status message is the problem alone, without the knob's name.
absl::StatusOr<nlohmann::json> KnobValueFromYaml(const KnobSpec& knob, const YAML::Node& value);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_KNOB_YAML_H_
