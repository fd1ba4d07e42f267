// Reading the `decompose:` key of a sweep spec.
#include "common/decompose/decompose_spec.h"

#include <algorithm>
#include <string_view>

#include "common/spec/yaml_values.h"

namespace ablate {
namespace {

constexpr std::string_view kDecomposeKeys[] = {"from", "to", "groups"};
constexpr size_t kMaxGroups = 64;

bool CheckKeys(const YAML::Node& node, SpecErrors* errors) {
  bool ok = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    YAML::Node key = it->first;
    std::string name = key.IsScalar() ? key.Scalar() : DescribeNode(key);
    if (std::find(std::begin(kDecomposeKeys), std::end(kDecomposeKeys), name) !=
        std::end(kDecomposeKeys)) {
      continue;
    }
    errors->Add(key, KeyPath("decompose", name),
                "unknown key '" + name + "'" + DidYouMean(ClosestNames(name, kDecomposeKeys)) +
                    " (valid keys: from, to, groups)");
    ok = false;
  }
  return ok;
}

std::optional<std::string> ReadScriptName(const YAML::Node& node, const char* key,
                                          SpecPosition* at, SpecErrors* errors) {
  const std::string path = KeyPath("decompose", key);
  if (!node[key]) {
    errors->Add(node, path, std::string("missing required key '") + key + "' (a script file)");
    return std::nullopt;
  }
  *at = PositionOf(node[key]);
  std::optional<std::string> s = ReadString(node[key], path, errors);
  if (s && s->empty()) {
    errors->Add(node[key], path, "expected a script file, got nothing");
    return std::nullopt;
  }
  return s;
}

bool ReadGroups(const YAML::Node& node, DecomposeSpec* out, SpecErrors* errors) {
  if (!node.IsMap() || node.size() > kMaxGroups) {
    errors->Add(node, "decompose.groups",
                "expected a map of at most 64 NAME: \"FIRST-LAST,...\" (TO line ranges), got " +
                    DescribeNode(node));
    return false;
  }
  bool ok = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    YAML::Node key = it->first, value = it->second;
    std::string name = key.IsScalar() ? key.Scalar() : DescribeNode(key);
    std::optional<std::string> ranges =
        ReadString(value, KeyPath("decompose.groups", name), errors);
    if (!ranges) {
      ok = false;
      continue;
    }
    absl::StatusOr<ChangeGroup> g = ParseChangeRanges(name, *ranges);
    if (!g.ok()) {
      errors->Add(value, KeyPath("decompose.groups", name), std::string(g.status().message()));
      ok = false;
      continue;
    }
    out->groups.push_back(*std::move(g));
  }
  return ok;
}

}  // namespace

std::optional<DecomposeSpec> ReadDecomposeSpec(const YAML::Node& node, SpecErrors* errors) {
  if (!node.IsMap()) {
    errors->Add(node, "decompose", "expected a map {from, to, groups}, got " + DescribeNode(node));
    return std::nullopt;
  }
  DecomposeSpec d;
  d.at = PositionOf(node);
  bool ok = CheckKeys(node, errors);
  std::optional<std::string> from = ReadScriptName(node, "from", &d.from_at, errors);
  std::optional<std::string> to = ReadScriptName(node, "to", &d.to_at, errors);
  if (node["groups"] && !ReadGroups(node["groups"], &d, errors)) ok = false;
  if (!ok || !from || !to) return std::nullopt;
  d.from = *from, d.to = *to;
  return d;
}

}  // namespace ablate
