// The period grammar: <number><unit>, the unit always required.
#include "common/spec/duration.h"

#include <array>
#include <cctype>

namespace ablate {
namespace {

constexpr size_t kMaxIntegerDigits = 9;
constexpr size_t kMaxFractionDigits = 3;

struct Unit {
  std::string_view name;
  int64_t ms;  // 0 for steps
};
constexpr std::array<Unit, 5> kUnits = {
    {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"steps", 0}}};

size_t CountDigits(std::string_view text, size_t from) {
  size_t n = 0;
  while (from + n < text.size() && std::isdigit(static_cast<unsigned char>(text[from + n]))) ++n;
  return n;
}

// "30s, 10m or 1h" and, where steps count, "or 500steps".
std::string Examples(PeriodUnits units) {
  return units == PeriodUnits::kTimeOrSteps ? "e.g. 30s, 10m, 1h or 500steps"
                                            : "e.g. 500ms, 30s, 5m or 2h";
}

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// Digits of the whole and fractional parts as one integer and the number of fraction digits.
struct Number {
  int64_t scaled = 0;   // "1.25" -> 125
  size_t fraction = 0;  // "1.25" -> 2
  size_t length = 0;    // characters used
};

std::optional<Number> ReadNumber(std::string_view text) {
  Number n;
  size_t whole = CountDigits(text, 0);
  if (whole == 0 || whole > kMaxIntegerDigits) return std::nullopt;
  n.length = whole;
  if (n.length < text.size() && text[n.length] == '.') {
    n.fraction = CountDigits(text, n.length + 1);
    if (n.fraction == 0 || n.fraction > kMaxFractionDigits) return std::nullopt;
    n.length += 1 + n.fraction;
  }
  for (char c : text.substr(0, n.length)) {
    if (c != '.') n.scaled = n.scaled * 10 + (c - '0');
  }
  return n;
}

}  // namespace

std::optional<Period> ParsePeriod(std::string_view text, PeriodUnits units, std::string* error) {
  std::optional<Number> number = ReadNumber(text);
  std::string_view unit_text = number ? text.substr(number->length) : std::string_view();
  if (number && unit_text.empty()) {
    *error = Quoted(text) + " has no unit; write " + std::string(text) + "s for seconds" +
             (units == PeriodUnits::kTimeOrSteps ? " or " + std::string(text) + "steps for steps"
                                                 : "") +
             " (" + Examples(units) + ")";
    return std::nullopt;
  }
  const Unit* unit = nullptr;
  for (const Unit& u : kUnits) {
    if (u.name == unit_text && (u.ms > 0 || units == PeriodUnits::kTimeOrSteps)) unit = &u;
  }
  if (!number || unit == nullptr) {
    *error = Quoted(text) + " is not a duration; write " + Examples(units);
    return std::nullopt;
  }
  int64_t divisor = 1;
  for (size_t i = 0; i < number->fraction; ++i) divisor *= 10;
  Period p;
  if (unit->ms == 0) {
    if (number->fraction > 0) {
      *error = Quoted(text) + " is not a whole number of steps";
      return std::nullopt;
    }
    p.steps = number->scaled;
    return p;
  }
  // At most 999999999.999 h: 10^12 * 3.6e6 stays far below 2^63.
  if (number->scaled * unit->ms % divisor != 0) {
    *error = Quoted(text) + " is not a whole number of milliseconds";
    return std::nullopt;
  }
  p.ms = number->scaled * unit->ms / divisor;
  return p;
}

std::optional<int64_t> ParseDurationMs(std::string_view text, std::string* error) {
  std::optional<Period> p = ParsePeriod(text, PeriodUnits::kTime, error);
  if (!p) return std::nullopt;
  return p->ms;
}

}  // namespace ablate
