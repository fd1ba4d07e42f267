// Durations as the project's YAML files write them ("500ms", "30s", "5m", "2h"): the pools
// file's idle_exit and signal_before, the sweep spec's checkpoint_every.
#ifndef ABLATE_SERVER_SWEEP_DURATION_H_
#define ABLATE_SERVER_SWEEP_DURATION_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace ablate {

// "500ms", "30s", "5m", "2h" (a bare number is seconds) -> ms; INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> ParseDurationMs(std::string_view text);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_DURATION_H_
