// The one grammar for periods that the project reads: the sweep spec's `checkpoint_every`, the
// pools file's `idle_exit` and `signal_before`, and `ablate-train --checkpoint-every`.
//
//   <number><unit>     number: digits, optionally with a fraction of up to 3 digits
//   unit: ms, s, m, h  wall time ("500ms", "30s", "1.5s", "10m", "2h")
//         steps        training steps ("500steps"), only where a field counts steps
//
// The unit is always required: a bare "600" read as seconds in one file and as steps on a
// command line, so it is refused everywhere with a message that says what to write.
// Pure C++ with no dependencies: the trainer builds with it alone (common/portable.cmake).
#ifndef ABLATE_COMMON_SPEC_DURATION_H_
#define ABLATE_COMMON_SPEC_DURATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ablate {

// What a field accepts.
enum class PeriodUnits { kTime, kTimeOrSteps };

// Exactly one of the two is set by a successful parse (it may be 0: "0s"; callers bound it).
struct Period {
  std::optional<int64_t> ms;     // wall time, in whole milliseconds
  std::optional<int64_t> steps;  // training steps
};

// The period of `text`, or nullopt with `*error` set to what is wrong and what to write instead
// (without the field's name: the caller puts it in front). Refused: a bare number, an unknown
// unit, a sign, spaces, a fraction of steps or of a millisecond, more than 9 integer digits.
std::optional<Period> ParsePeriod(std::string_view text, PeriodUnits units, std::string* error);

// A wall-time period in ms (PeriodUnits::kTime), or nullopt with `*error` set.
std::optional<int64_t> ParseDurationMs(std::string_view text, std::string* error);

}  // namespace ablate

#endif  // ABLATE_COMMON_SPEC_DURATION_H_
