// A YAML value read as a knob's value (sweep specs' `set:` and `grid:`).
#include "server/sweep/knob_yaml.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "common/spec/yaml_values.h"

namespace ablate {
namespace {

using J = nlohmann::json;

// List knobs hold a few numbers (layer indices, coefficients); longer lists are mistakes.
constexpr size_t kMaxListValues = 256;

bool IsScalar(const YAML::Node& node) { return node.IsDefined() && node.IsScalar(); }

std::optional<double> ParseDouble(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return d;
}

// A number as JSON: an integer when the text is one, else a double; nullopt when not a number.
std::optional<J> NumberJson(const std::string& text) {
  if (std::optional<int64_t> i = ParseYamlInt(text)) return J(*i);
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
    std::optional<bool> b = ParseYamlBool(text);
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
