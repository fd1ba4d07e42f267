// What the coordinator accepts from a worker, checked before anything is stored: a worker holding
// a valid attempt and fencing token is still outside input (a buggy script, a hostile client).
// The limits are part of the worker protocol (common/worker_limits.h); the worker keeps within
// them itself (worker/run_supervisor.cc trims its stderr tail and error).
#ifndef ABLATE_SERVER_CORE_WORKER_INPUT_H_
#define ABLATE_SERVER_CORE_WORKER_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/worker_limits.h"
#include "server/core/model.h"

namespace ablate {

// OK, or INVALID_ARGUMENT naming the first thing wrong: more than kMaxPointsPerBatch points, a
// negative step, a step beyond `max_step` (the run's configured steps; nullopt = unknown, not
// checked), a non-finite or out-of-range value, negative times or tokens, then CheckOrder.
absl::Status CheckMetricBatch(const std::vector<MetricPoint>& points,
                              std::optional<int64_t> max_step);

// Also part of CheckMetricBatch: INVALID_ARGUMENT for a step that appears twice, or a
// train_time_ms (cumulative) below that of a point with a lower step.
absl::Status CheckOrder(const std::vector<MetricPoint>& points);

// MetricBatch.seq: INVALID_ARGUMENT below 1.
absl::Status CheckSeq(int64_t seq);

// MetricBatch.resumed_from_step (the checkpoint's steps done): OK, or INVALID_ARGUMENT when it is
// below 1, beyond `max_step` (when known), or after a point of the batch (a resumed trainer
// reports nothing before its checkpoint's step).
absl::Status CheckResumedFrom(int64_t resumed_from_step, const std::vector<MetricPoint>& points,
                              std::optional<int64_t> max_step);

// OK, or INVALID_ARGUMENT for a stderr tail or error over their limits, or a summary with a
// non-finite or out-of-range number or a negative step count.
absl::Status CheckRunResult(std::string_view error, std::string_view stderr_tail,
                            const std::optional<RunSummary>& summary);

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_WORKER_INPUT_H_
