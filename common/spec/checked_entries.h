// The keys of one YAML map checked against the keys a reader knows, for every YAML file the
// project reads (sweep specs, the pools file): unknown keys (with the closest valid names) and
// repeated keys are positioned errors, and a map with more keys than any reader knows is refused
// before it is walked (with aliases, a small text can name a big map).
#ifndef ABLATE_COMMON_SPEC_CHECKED_ENTRIES_H_
#define ABLATE_COMMON_SPEC_CHECKED_ENTRIES_H_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "common/spec/spec_errors.h"

namespace ablate {

// More keys than this in one map is an error (no reader knows as many).
inline constexpr size_t kMaxMapKeys = 64;

struct SpecEntry {
  YAML::Node key;    // for the position of errors about the key itself
  YAML::Node value;
};
using SpecEntries = std::map<std::string, SpecEntry>;

// The entries of `map` whose keys are in `allowed`, by key. Adds one error (at `path`) and
// returns nothing when `map` is not a map or has more than kMaxMapKeys keys; adds one error per
// unknown key ("did you mean", else the valid keys) and per repeated key (naming the first's
// line), and leaves those out.
SpecEntries CheckedEntries(const YAML::Node& map, std::string_view path,
                           std::span<const std::string_view> allowed, SpecErrors* errors);

// "a, b, c".
std::string JoinNames(std::span<const std::string_view> names);

}  // namespace ablate

#endif  // ABLATE_COMMON_SPEC_CHECKED_ENTRIES_H_
