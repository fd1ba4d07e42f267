// Min/max downsampling of metric curves for charts: a curve of any length becomes at most
// `max_points` points per series, and every spike (loss blow-up, slow step) survives because each
// bucket keeps both its smallest and its largest value.
#ifndef ABLATE_SERVER_STORE_DOWNSAMPLE_H_
#define ABLATE_SERVER_STORE_DOWNSAMPLE_H_

#include <cstddef>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/model.h"

namespace ablate {

// Default for max_points == 0, as in the API (GetMetricsRequest).
inline constexpr int kDefaultMaxPoints = 2000;

// Indices (ascending) of the points to keep from a series of `values` (in step order): all of
// them when there are at most `max_points`, else for each of max_points/2 buckets of consecutive
// points the index of its minimum and of its maximum (once when they coincide).
std::vector<size_t> MinMaxIndices(std::span<const double> values, int max_points);

// Downsamples `points` (sorted by step, one per step) series by series: train_loss, val_loss, lr
// and step_ms each keep at most `max_points` values, chosen by MinMaxIndices over the points that
// carry that series. A returned point carries only the series values selected at its step;
// train_time_ms and tokens are x coordinates and ride along on every returned point.
// max_points == 0 means kDefaultMaxPoints. INVALID_ARGUMENT for max_points < 0 or == 1.
absl::StatusOr<std::vector<MetricPoint>> DownsampleMinMax(std::span<const MetricPoint> points,
                                                          int max_points);

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_DOWNSAMPLE_H_
