// Query and path parameter parsing for the dashboard API.
#include "server/http/request_params.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "server/store/absl_compat.h"
#include "server/store/downsample.h"

namespace ablate {
namespace {

std::optional<int64_t> ToInt(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

absl::Status CheckParamName(std::string_view name,
                            std::initializer_list<std::string_view> allowed) {
  for (std::string_view a : allowed) {
    if (a == name) return absl::OkStatus();
  }
  std::string valid;
  for (std::string_view a : allowed) absl::StrAppend(&valid, valid.empty() ? "" : ", ", ToAbsl(a));
  return absl::InvalidArgumentError(
      absl::StrCat("unknown query parameter '", ToAbsl(name), "'",
                   valid.empty() ? "; this endpoint takes none"
                                 : absl::StrCat("; this endpoint takes: ", valid)));
}

absl::StatusOr<int64_t> ParseId(std::string_view name, std::string_view text) {
  std::optional<int64_t> v = ToInt(text);
  if (!v || *v < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(name), " must be a positive integer, got '", ToAbsl(text), "'"));
  }
  return *v;
}

absl::StatusOr<int64_t> ParseIntParam(std::string_view name, std::string_view text, int64_t min,
                                      int64_t max, int64_t fallback) {
  if (text.empty()) return fallback;
  std::optional<int64_t> v = ToInt(text);
  if (!v || *v < min || *v > max) {
    return absl::InvalidArgumentError(absl::StrCat(ToAbsl(name), " must be an integer from ", min,
                                                   " to ", max, ", got '", ToAbsl(text), "'"));
  }
  return *v;
}

absl::StatusOr<int> ParseMaxPoints(std::string_view text) {
  std::optional<int64_t> v = text.empty() ? 0 : ToInt(text);
  if (v && *v == 0) return kDefaultMaxPoints;
  if (!v || *v < 2 || *v > kMaxPointsLimit) {
    return absl::InvalidArgumentError(absl::StrCat("max_points must be 0 (the default, ",
                                                   kDefaultMaxPoints, ") or an integer from 2 to ",
                                                   kMaxPointsLimit, ", got '", ToAbsl(text), "'"));
  }
  return static_cast<int>(*v);
}

absl::StatusOr<std::optional<RunState>> ParseRunStateParam(std::string_view text) {
  if (text.empty()) return std::optional<RunState>();
  std::optional<RunState> s = ParseRunState(text);
  if (!s) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: unknown run state '", ToAbsl(text),
                     "'; valid: queued, assigned, running, succeeded, failed, cancelled"));
  }
  return s;
}

absl::StatusOr<std::optional<SweepState>> ParseSweepStateParam(std::string_view text) {
  if (text.empty()) return std::optional<SweepState>();
  std::optional<SweepState> s = ParseSweepState(text);
  if (!s) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: unknown sweep state '", ToAbsl(text),
                     "'; valid: queued, running, succeeded, failed, cancelled"));
  }
  return s;
}

}  // namespace ablate
