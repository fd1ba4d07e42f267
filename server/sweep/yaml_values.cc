// Scalar and knob-value reads over yaml-cpp nodes.
#include "server/sweep/yaml_values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace ablate {
namespace {

using J = nlohmann::json;

// List knobs hold a few numbers (layer indices, coefficients); longer lists are mistakes.
constexpr size_t kMaxListValues = 256;

bool IsScalar(const YAML::Node& node) { return node.IsDefined() && node.IsScalar(); }

std::optional<int64_t> ParseInt(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return d;
}

std::optional<bool> ParseBool(std::string_view text) {
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return std::nullopt;
}

// A number as JSON: an integer when the text is one, else a double; nullopt when not a number.
std::optional<J> NumberJson(const std::string& text) {
  if (std::optional<int64_t> i = ParseInt(text)) return J(*i);
  if (std::optional<double> d = ParseDouble(text)) return J(*d);
  return std::nullopt;
}

// Strips the "knob: " prefix that knob_schema puts on its messages.
std::string ProblemOnly(const KnobSpec& knob, const std::string& message) {
  std::string prefix = std::string(knob.name) + ": ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

absl::StatusOr<J> RawKnobValue(const KnobSpec& knob, const YAML::Node& value) {
  bool list = knob.type == KnobType::kIntList || knob.type == KnobType::kFloatList;
  if (value.IsSequence()) {
    if (!list) {
      return absl::InvalidArgumentError("expected a " + std::string(KnobTypeName(knob.type)) +
                                        ", got a list");
    }
    if (value.size() > kMaxListValues) {
      return absl::InvalidArgumentError("expected at most " + std::to_string(kMaxListValues) +
                                        " numbers, got " + std::to_string(value.size()));
    }
    J out = J::array();
    for (const YAML::Node& e : value) {
      std::optional<J> n = IsScalar(e) ? NumberJson(e.Scalar()) : std::nullopt;
      if (!n)
        return absl::InvalidArgumentError("expected a list of numbers, got " + DescribeNode(e) +
                                          " in the list");
      out.push_back(*n);
    }
    return out;
  }
  if (!IsScalar(value)) {
    return absl::InvalidArgumentError("expected a " + std::string(KnobTypeName(knob.type)) +
                                      ", got " + DescribeNode(value));
  }
  const std::string& text = value.Scalar();
  if (list) {
    Result<J> parsed = ParseKnobText(knob, text);
    if (!parsed.ok()) return absl::InvalidArgumentError(ProblemOnly(knob, parsed.error().message));
    return *parsed;
  }
  if (knob.type == KnobType::kBool) {
    std::optional<bool> b = ParseBool(text);
    return b ? J(*b) : J(text);
  }
  if (knob.type == KnobType::kChoice) return J(text);
  std::optional<J> n = NumberJson(text);
  if (!n) {
    return absl::InvalidArgumentError("expected a number, got '" + text + "'");
  }
  return *n;
}

}  // namespace

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
  std::optional<int64_t> v = IsScalar(node) ? ParseInt(node.Scalar()) : std::nullopt;
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
  std::optional<bool> v = IsScalar(node) ? ParseBool(node.Scalar()) : std::nullopt;
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

absl::StatusOr<J> KnobValueFromYaml(const KnobSpec& knob, const YAML::Node& value) {
  if (!value.IsDefined() || value.IsNull()) {
    return absl::InvalidArgumentError("has no value");
  }
  absl::StatusOr<J> raw = RawKnobValue(knob, value);
  if (!raw.ok()) return raw.status();
  Result<J> checked = ValidateKnobValue(knob, *raw);
  if (!checked.ok()) {
    return absl::InvalidArgumentError(ProblemOnly(knob, checked.error().message));
  }
  return *checked;
}

}  // namespace ablate
