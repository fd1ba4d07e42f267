// Typed reads of YAML nodes for the project's YAML files (sweep specs, the pools file). Each
// reader either returns the value or adds one precise error (position of the offending node, its
// key path, what was expected) and returns nullopt, so that a parse can go on and report every
// problem of a file at once.
#ifndef ABLATE_COMMON_SPEC_YAML_VALUES_H_
#define ABLATE_COMMON_SPEC_YAML_VALUES_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/spec/spec_errors.h"

namespace ablate {

// An integer scalar's text ("42", "+42", "-3"); nullopt for anything else.
std::optional<int64_t> ParseYamlInt(std::string_view text);
// true/false (also True/TRUE/False/FALSE, as YAML's core schema); nullopt for anything else.
std::optional<bool> ParseYamlBool(std::string_view text);

// A short description of what a node holds, for "expected X, got Y": "a map", "a list",
// "nothing", or the scalar quoted ('many').
std::string DescribeNode(const YAML::Node& node);

// An integer scalar within [lo, hi].
std::optional<int64_t> ReadInt(const YAML::Node& node, std::string_view path, int64_t lo,
                               int64_t hi, SpecErrors* errors);
// true/false (also True/TRUE/False/FALSE, as YAML's core schema).
std::optional<bool> ReadBool(const YAML::Node& node, std::string_view path, SpecErrors* errors);
// Any scalar, as its text.
std::optional<std::string> ReadString(const YAML::Node& node, std::string_view path,
                                      SpecErrors* errors);
// A name: 1..100 characters from [A-Za-z0-9._-]. `what` names it in messages ("sweep name").
std::optional<std::string> ReadName(const YAML::Node& node, std::string_view path,
                                    std::string_view what, SpecErrors* errors);
// A wall-time duration in ms, in the one grammar of common/spec/duration.h ("30s", "10m"; a bare
// number is refused, saying what to write).
std::optional<int64_t> ReadDurationMs(const YAML::Node& node, std::string_view path,
                                      SpecErrors* errors);
// The same for text already read: INVALID_ARGUMENT with duration.h's message.
absl::StatusOr<int64_t> DurationMsOrError(std::string_view text);
// A list of non-empty strings of at most 100 characters each.
std::optional<std::vector<std::string>> ReadStringList(const YAML::Node& node,
                                                       std::string_view path, SpecErrors* errors);

// True for names ReadName accepts.
bool IsValidName(std::string_view name);

// Up to `limit` of `candidates` closest to `name` by edit distance, best first; only those
// close enough to be a plausible typo.
std::vector<std::string> ClosestNames(std::string_view name,
                                      std::span<const std::string_view> candidates,
                                      size_t limit = 3);
// "; did you mean 'a', 'b'?" or "" when `names` is empty.
std::string DidYouMean(const std::vector<std::string>& names);

}  // namespace ablate

#endif  // ABLATE_COMMON_SPEC_YAML_VALUES_H_
