// Duration text of the project's YAML files.
#include "server/sweep/duration.h"

#include <cctype>
#include <map>
#include <string>

namespace ablate {

absl::StatusOr<int64_t> ParseDurationMs(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string_view unit = text.substr(digits);
  static const std::map<std::string_view, int64_t> kUnits = {
      {"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
  auto it = kUnits.find(unit);
  if (digits == 0 || digits > 9 || it == kUnits.end()) {
    return absl::InvalidArgumentError("'" + std::string(text) +
                                      "' is not a duration; write e.g. 500ms, 30s, 5m or 2h");
  }
  return std::stoll(std::string(text.substr(0, digits))) * it->second;
}

}  // namespace ablate
