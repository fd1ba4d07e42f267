// The sweep-spec pipeline: raw-byte checks, YAML parsing (yaml-cpp errors translated here, and
// only here), typed reading, expansion.
#include "server/sweep/sweep_spec.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "server/sweep/spec_errors.h"
#include "server/sweep/spec_reader.h"

namespace ablate {
namespace {

void AddSyntaxError(std::string_view text, const YAML::Exception& e, SpecErrors* errors) {
  SpecPosition at = PositionOf(e.mark);
  if (std::optional<SpecPosition> tab = FindTabIndentation(text, at.line)) {
    errors->Add(*tab, "", "tab character in indentation; YAML indents with spaces only");
    return;
  }
  std::string hint;
  if (e.msg.find("flow not found") != std::string::npos) {
    hint = " (an unclosed '[' or '{'?)";
  } else if (e.msg.find("end of map not found") != std::string::npos ||
             e.msg.find("illegal map value") != std::string::npos) {
    hint = " (is the indentation consistent?)";
  }
  errors->Add(at, "", "YAML syntax error: " + e.msg + hint);
}

// The spec's single document, or nullopt after adding an error.
std::optional<YAML::Node> LoadDocument(std::string_view text, SpecErrors* errors) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    AddSyntaxError(text, e, errors);
    return std::nullopt;
  }
  if (docs.size() > 1) {
    errors->Add(docs[1], "", "a spec is one YAML document; found another one here");
    return std::nullopt;
  }
  return docs.empty() ? YAML::Node() : docs[0];
}

}  // namespace

absl::StatusOr<ExpandedSweep> ParseSweepSpec(std::string_view yaml_text,
                                             std::string_view file_name) {
  SpecErrors errors(file_name);
  if (!PrescanSpec(yaml_text, &errors)) return errors.ToStatus();
  std::optional<YAML::Node> root = LoadDocument(yaml_text, &errors);
  if (!root) return errors.ToStatus();
  ParsedSpec spec = ReadSpec(*root, &errors);
  if (!errors.empty()) return errors.ToStatus();
  std::optional<ExpandedSweep> expanded = ExpandSweep(spec, yaml_text, &errors);
  if (!expanded) return errors.ToStatus();
  return std::move(*expanded);
}

}  // namespace ablate
