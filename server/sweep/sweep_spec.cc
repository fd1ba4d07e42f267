// The sweep-spec pipeline: raw-byte checks, YAML parsing, typed reading, expansion.
#include "server/sweep/sweep_spec.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "common/spec/spec_document.h"
#include "common/spec/spec_errors.h"
#include "server/sweep/spec_reader.h"

namespace ablate {

absl::StatusOr<ExpandedSweep> ParseSweepSpec(std::string_view yaml_text,
                                             std::string_view file_name) {
  return ParseSweepSpec(yaml_text, file_name, ScriptUploads{});
}

absl::StatusOr<ExpandedSweep> ParseSweepSpec(std::string_view yaml_text,
                                             std::string_view file_name,
                                             const ScriptUploads& uploads) {
  SpecErrors errors(file_name, yaml_text);
  if (!PrescanSpec(yaml_text, &errors)) return errors.ToStatus();
  std::optional<YAML::Node> root = LoadSpecDocument(yaml_text, &errors);
  if (!root) return errors.ToStatus();
  try {
    ParsedSpec spec = ReadSpec(*root, &errors);
    if (!errors.empty()) return errors.ToStatus();
    std::optional<ExpandedSweep> expanded = ExpandSweep(spec, yaml_text, &errors, &uploads);
    if (!expanded) return errors.ToStatus();
    return std::move(*expanded);
  } catch (const YAML::Exception& e) {
    // Node access on a valid document should not throw; if yaml-cpp does, it is still the
    // spec's fault and still gets a position.
    errors.Add(PositionOf(e.mark), "", "YAML error: " + e.msg);
    return errors.ToStatus();
  }
}

}  // namespace ablate
