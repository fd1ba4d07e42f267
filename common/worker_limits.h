// The bounds of the worker protocol that both ends keep: the coordinator refuses what is past
// them (server/core/worker_input.h checks every message), and the worker trims its own text to
// them before sending (worker/run_supervisor.cc). proto/ablate/v1/worker.proto cites them.
#ifndef ABLATE_COMMON_WORKER_LIMITS_H_
#define ABLATE_COMMON_WORKER_LIMITS_H_

#include <cstddef>

namespace ablate {

// Most points in one MetricBatch (ablate-worker sends at most 100).
inline constexpr int kMaxPointsPerBatch = 5000;
// Most bytes of RunFinished.stderr_tail and RunFinished.error.
inline constexpr size_t kMaxStderrTailBytes = 64 * 1024;
inline constexpr size_t kMaxErrorBytes = 4 * 1024;
// Largest magnitude of any reported number. Far above any real loss, lr or time (1e12 ms is 31
// years), far below where statistics overflow (a 1e300 loss squared is inf).
inline constexpr double kMaxMetricMagnitude = 1e12;

}  // namespace ablate

#endif  // ABLATE_COMMON_WORKER_LIMITS_H_
