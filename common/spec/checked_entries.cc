// One map's keys against the known ones.
#include "common/spec/checked_entries.h"

#include <algorithm>
#include <vector>

#include "common/spec/yaml_values.h"

namespace ablate {

std::string JoinNames(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

SpecEntries CheckedEntries(const YAML::Node& map, std::string_view path,
                           std::span<const std::string_view> allowed, SpecErrors* errors) {
  SpecEntries entries;
  if (!map.IsMap()) {
    errors->Add(map, path, "expected a map, got " + DescribeNode(map));
    return entries;
  }
  if (map.size() > kMaxMapKeys) {
    errors->Add(map, path,
                "has " + std::to_string(map.size()) + " keys; valid keys: " + JoinNames(allowed));
    return entries;
  }
  for (auto it = map.begin(); it != map.end(); ++it) {
    YAML::Node key = it->first;  // a copy: `it->first` lives in a temporary proxy
    std::string name = key.IsScalar() ? key.Scalar() : DescribeNode(key);
    std::string key_path = KeyPath(path, name);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::vector<std::string> near = ClosestNames(name, allowed);
      errors->Add(key, key_path,
                  "unknown key '" + name + "'" +
                      (near.empty() ? "; valid keys: " + JoinNames(allowed) : DidYouMean(near)));
    } else if (auto seen = entries.find(name); seen != entries.end()) {
      errors->Add(key, key_path,
                  "duplicate key '" + name + "' (first at line " +
                      std::to_string(PositionOf(seen->second.key).line) + ")");
    } else {
      entries[name] = SpecEntry{key, it->second};
    }
  }
  return entries;
}

}  // namespace ablate
