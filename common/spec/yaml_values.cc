// Typed scalar reads over yaml-cpp nodes, with positioned errors.
#include "common/spec/yaml_values.h"

#include <algorithm>
#include <charconv>

#include "common/edit_distance.h"
#include "common/spec/duration.h"

namespace ablate {
namespace {

bool IsScalar(const YAML::Node& node) { return node.IsDefined() && node.IsScalar(); }

}  // namespace

std::optional<int64_t> ParseYamlInt(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

std::optional<bool> ParseYamlBool(std::string_view text) {
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return std::nullopt;
}

std::string DescribeNode(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  std::string text = node.Scalar();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return "'" + text + "'";
}

std::optional<int64_t> ReadInt(const YAML::Node& node, std::string_view path, int64_t lo,
                               int64_t hi, SpecErrors* errors) {
  std::optional<int64_t> v = IsScalar(node) ? ParseYamlInt(node.Scalar()) : std::nullopt;
  if (!v) {
    errors->Add(node, path, "expected an integer, got " + DescribeNode(node));
    return std::nullopt;
  }
  if (*v < lo || *v > hi) {
    errors->Add(node, path,
                "value " + std::to_string(*v) + " is out of range [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> ReadBool(const YAML::Node& node, std::string_view path, SpecErrors* errors) {
  std::optional<bool> v = IsScalar(node) ? ParseYamlBool(node.Scalar()) : std::nullopt;
  if (!v) errors->Add(node, path, "expected true or false, got " + DescribeNode(node));
  return v;
}

std::optional<std::string> ReadString(const YAML::Node& node, std::string_view path,
                                      SpecErrors* errors) {
  if (!IsScalar(node)) {
    errors->Add(node, path, "expected a string, got " + DescribeNode(node));
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<int64_t> ReadDurationMs(const YAML::Node& node, std::string_view path,
                                      SpecErrors* errors) {
  std::optional<std::string> text = ReadString(node, path, errors);
  if (!text) return std::nullopt;
  std::string problem;
  std::optional<int64_t> ms = ParseDurationMs(*text, &problem);
  if (!ms) errors->Add(node, path, problem);
  return ms;
}

absl::StatusOr<int64_t> DurationMsOrError(std::string_view text) {
  std::string problem;
  std::optional<int64_t> ms = ParseDurationMs(text, &problem);
  if (!ms) return absl::InvalidArgumentError(problem);
  return *ms;
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 100) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::optional<std::string> ReadName(const YAML::Node& node, std::string_view path,
                                    std::string_view what, SpecErrors* errors) {
  std::optional<std::string> s = ReadString(node, path, errors);
  if (s && !IsValidName(*s)) {
    errors->Add(node, path,
                std::string(what) + " " + DescribeNode(node) +
                    " is invalid: use 1 to 100 characters from A-Z a-z 0-9 . _ - (no spaces)");
    return std::nullopt;
  }
  return s;
}

std::optional<std::vector<std::string>> ReadStringList(const YAML::Node& node,
                                                       std::string_view path, SpecErrors* errors) {
  if (!node.IsSequence()) {
    errors->Add(node, path, "expected a list of strings, got " + DescribeNode(node));
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < node.size(); ++i) {
    std::string item_path = IndexPath(path, i);
    std::optional<std::string> s = ReadString(node[i], item_path, errors);
    if (!s) return std::nullopt;
    if (s->empty() || s->size() > 100) {
      errors->Add(node[i], item_path, "expected 1 to 100 characters");
      return std::nullopt;
    }
    out.push_back(*s);
  }
  return out;
}

std::vector<std::string> ClosestNames(std::string_view name,
                                      std::span<const std::string_view> candidates, size_t limit) {
  std::vector<std::pair<size_t, std::string_view>> scored;
  for (std::string_view c : candidates) {
    size_t d = EditDistance(name, c);
    if (d <= std::max<size_t>(2, c.size() / 3)) scored.push_back({d, c});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < limit; ++i) out.emplace_back(scored[i].second);
  return out;
}

std::string DidYouMean(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string out = "; did you mean ";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "?";
}

}  // namespace ablate
