// Parsing of the dashboard API's path and query parameters. Every error is INVALID_ARGUMENT with
// a message that names the parameter and repeats the text that was wrong (sent as HTTP 400).
// Pure functions; no HTTP library types.
#ifndef ABLATE_SERVER_HTTP_REQUEST_PARAMS_H_
#define ABLATE_SERVER_HTTP_REQUEST_PARAMS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/core/model.h"

namespace ablate {

// Most points per series a metrics request may ask for.
inline constexpr int kMaxPointsLimit = 20000;

// INVALID_ARGUMENT naming `name` and the parameters the endpoint takes, unless it is one of them.
absl::Status CheckParamName(std::string_view name,
                            std::initializer_list<std::string_view> allowed);

// A sweep or run id: a decimal integer >= 1.
absl::StatusOr<int64_t> ParseId(std::string_view name, std::string_view text);

// An integer in [min, max]; `text` empty gives `fallback`.
absl::StatusOr<int64_t> ParseIntParam(std::string_view name, std::string_view text, int64_t min,
                                      int64_t max, int64_t fallback);

// max_points: empty or 0 means the API default (kDefaultMaxPoints), else 2..kMaxPointsLimit.
absl::StatusOr<int> ParseMaxPoints(std::string_view text);

// A state filter by name ("running"); empty means no filter.
absl::StatusOr<std::optional<RunState>> ParseRunStateParam(std::string_view text);
absl::StatusOr<std::optional<SweepState>> ParseSweepStateParam(std::string_view text);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_REQUEST_PARAMS_H_
