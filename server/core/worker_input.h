// What the coordinator accepts from a worker, checked before anything is stored: a worker holding
// a valid attempt and fencing token is still outside input (a buggy script, a hostile client).
// The limits are part of the worker protocol (proto/ablate/v1/worker.proto cites them); the
// worker keeps within them itself (worker/run_supervisor.cc trims its stderr tail and error).
#ifndef ABLATE_SERVER_CORE_WORKER_INPUT_H_
#define ABLATE_SERVER_CORE_WORKER_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "server/core/model.h"

namespace ablate {

// Most points in one MetricBatch (ablate-worker sends at most 100).
inline constexpr int kMaxPointsPerBatch = 5000;
// Most bytes of RunFinished.stderr_tail and RunFinished.error.
inline constexpr size_t kMaxStderrTailBytes = 64 * 1024;
inline constexpr size_t kMaxErrorBytes = 4 * 1024;
// Largest magnitude of any reported number. Far above any real loss, lr or time (1e12 ms is 31
// years), far below where statistics overflow (a 1e300 loss squared is inf).
inline constexpr double kMaxMetricMagnitude = 1e12;

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
