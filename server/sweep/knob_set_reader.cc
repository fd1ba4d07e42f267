// Flattening and validating `set:` maps, keeping every knob's position for error messages.
#include "server/sweep/knob_set_reader.h"

#include <cctype>

#include "common/spec/yaml_values.h"
#include "server/sweep/knob_yaml.h"
#include "trainer/config/knob_schema.h"

namespace ablate {
namespace {

// Group prefixes are one level deep today ("muon.", "adam.", "window."); the limit only keeps
// a hostile spec from recursing far.
constexpr int kMaxGroupDepth = 4;
// More entries than knobs means repeats or unknown names; refusing early bounds the work an
// aliased map can cause.
constexpr size_t kMaxSetEntries = 256;

bool IsGroupPrefix(const std::string& name) {
  std::string prefix = name + ".";
  for (const KnobSpec& k : AllKnobs()) {
    if (k.name.starts_with(prefix)) return true;
  }
  return false;
}

class KnobSetBuilder {
 public:
  KnobSetBuilder(KnobSet* set, SpecErrors* errors) : set_(set), errors_(errors) {}

  void ReadMap(const YAML::Node& map, const std::string& prefix, int depth);

 private:
  void ReadEntry(const YAML::Node& key, const YAML::Node& value, const std::string& name,
                 int depth);
  void Fail(SpecPosition at, const std::string& path, const std::string& problem) {
    errors_->Add(at, path, problem);
    set_->ok = false;
  }

  KnobSet* set_;
  SpecErrors* errors_;
};

void KnobSetBuilder::ReadMap(const YAML::Node& map, const std::string& prefix, int depth) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    YAML::Node key = it->first;  // a copy: `it->first` lives in a temporary proxy
    if (!key.IsScalar()) {
      Fail(PositionOf(key), KeyPath(set_->path, prefix),
           "a knob name must be a string, got " + DescribeNode(key));
      continue;
    }
    std::string name = prefix.empty() ? key.Scalar() : prefix + "." + key.Scalar();
    ReadEntry(key, it->second, name, depth);
  }
}

void KnobSetBuilder::ReadEntry(const YAML::Node& key, const YAML::Node& value,
                               const std::string& name, int depth) {
  std::string path = KeyPath(set_->path, name);
  const KnobSpec* knob = FindKnob(name);
  if (knob == nullptr && value.IsMap() && IsGroupPrefix(name) && depth < kMaxGroupDepth) {
    ReadMap(value, name, depth + 1);
    return;
  }
  if (knob == nullptr) {
    Fail(PositionOf(key), path, "unknown knob '" + name + "'" + DidYouMean(ClosestKnobNames(name)));
    return;
  }
  if (auto seen = set_->positions.find(name); seen != set_->positions.end()) {
    Fail(PositionOf(key), path,
         "knob '" + name + "' is set twice (first at line " + std::to_string(seen->second.line) +
             ")");
    return;
  }
  absl::StatusOr<nlohmann::json> v = KnobValueFromYaml(*knob, value);
  set_->positions[name] = PositionOf(key);
  if (!v.ok()) {
    Fail(value.IsNull() ? PositionOf(key) : PositionOf(value), path,
         std::string(v.status().message()));
    return;
  }
  set_->values[name] = *v;
}

}  // namespace

std::string KnobSet::Blame(std::string_view error_key, std::string_view message) const {
  if (positions.count(std::string(error_key))) return std::string(error_key);
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  for (const auto& [knob, at] : positions) {
    for (size_t pos = message.find(knob); pos != std::string_view::npos;
         pos = message.find(knob, pos + 1)) {
      size_t end = pos + knob.size();
      bool starts = pos == 0 || !is_name_char(message[pos - 1]);
      bool ends = end == message.size() || !is_name_char(message[end]);
      if (starts && ends) return knob;
    }
  }
  return "";
}

SpecPosition KnobSet::PositionFor(std::string_view knob) const {
  auto it = positions.find(std::string(knob));
  return it == positions.end() ? position : it->second;
}

std::string KnobSet::PathFor(std::string_view knob) const {
  return positions.count(std::string(knob)) ? KeyPath(path, knob) : path;
}

KnobSet ReadKnobSet(const YAML::Node& node, std::string_view path, SpecErrors* errors) {
  KnobSet set;
  set.path = std::string(path);
  set.position = PositionOf(node);
  if (!node.IsDefined()) return set;
  if (!node.IsMap()) {
    errors->Add(node, path, "expected a map of knob: value, got " + DescribeNode(node));
    set.ok = false;
    return set;
  }
  if (node.size() > kMaxSetEntries) {
    errors->Add(node, path,
                "has " + std::to_string(node.size()) + " entries; there are only " +
                    std::to_string(AllKnobs().size()) + " knobs");
    set.ok = false;
    return set;
  }
  KnobSetBuilder(&set, errors).ReadMap(node, "", 0);
  return set;
}

}  // namespace ablate
