// Min/max bucket downsampling.
#include "server/store/downsample.h"

#include <algorithm>
#include <map>
#include <optional>

namespace ablate {
namespace {

// The four plotted series; train_time_ms and tokens are axes, not series.
using SeriesField = std::optional<double> MetricPoint::*;
constexpr SeriesField kSeries[] = {&MetricPoint::train_loss, &MetricPoint::val_loss,
                                   &MetricPoint::lr, &MetricPoint::step_ms};

}  // namespace

std::vector<size_t> MinMaxIndices(std::span<const double> values, int max_points) {
  const size_t n = values.size();
  std::vector<size_t> kept;
  if (max_points <= 0 || n <= static_cast<size_t>(max_points)) {
    for (size_t i = 0; i < n; ++i) kept.push_back(i);
    return kept;
  }
  const size_t buckets = static_cast<size_t>(std::max(1, max_points / 2));
  for (size_t b = 0; b < buckets; ++b) {
    const size_t begin = b * n / buckets;
    const size_t end = (b + 1) * n / buckets;
    if (begin == end) continue;
    auto first = values.begin() + static_cast<std::ptrdiff_t>(begin);
    auto last = values.begin() + static_cast<std::ptrdiff_t>(end);
    auto [lo, hi] = std::minmax_element(first, last);
    size_t lo_index = static_cast<size_t>(lo - values.begin());
    size_t hi_index = static_cast<size_t>(hi - values.begin());
    kept.push_back(std::min(lo_index, hi_index));
    if (lo_index != hi_index) kept.push_back(std::max(lo_index, hi_index));
  }
  return kept;
}

absl::StatusOr<std::vector<MetricPoint>> DownsampleMinMax(std::span<const MetricPoint> points,
                                                          int max_points) {
  if (max_points < 0 || max_points == 1) {
    return absl::InvalidArgumentError("max_points must be 0 (the default, 2000) or at least 2");
  }
  if (max_points == 0) max_points = kDefaultMaxPoints;
  if (points.size() <= static_cast<size_t>(max_points)) {
    return std::vector<MetricPoint>(points.begin(), points.end());
  }
  // Output points keyed by their index in `points`, which keeps step order.
  std::map<size_t, MetricPoint> out;
  for (SeriesField field : kSeries) {
    std::vector<size_t> carriers;
    std::vector<double> values;
    for (size_t i = 0; i < points.size(); ++i) {
      if (!(points[i].*field).has_value()) continue;
      carriers.push_back(i);
      values.push_back(*(points[i].*field));
    }
    for (size_t k : MinMaxIndices(values, max_points)) {
      const MetricPoint& source = points[carriers[k]];
      auto [it, inserted] = out.try_emplace(carriers[k]);
      if (inserted) {
        it->second.step = source.step;
        it->second.train_time_ms = source.train_time_ms;
        it->second.tokens = source.tokens;
      }
      it->second.*field = source.*field;
    }
  }
  std::vector<MetricPoint> result;
  result.reserve(out.size());
  for (auto& [index, point] : out) result.push_back(std::move(point));
  return result;
}

}  // namespace ablate
