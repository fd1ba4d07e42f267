// Size- and age-triggered batching of metric points.
#include "worker/batcher.h"

#include <utility>

namespace ablate::worker {

std::optional<std::vector<v1::MetricPoint>> Batcher::Add(const v1::MetricPoint& point,
                                                         int64_t now_ms) {
  if (!pending_.empty() && pending_.back().step() == point.step()) {
    pending_.back().MergeFrom(point);  // set fields of `point` win; unset ones keep the old value
  } else {
    if (pending_.empty()) oldest_ms_ = now_ms;
    pending_.push_back(point);
  }
  if (static_cast<int>(pending_.size()) >= options_.max_points) return TakeAll();
  return std::nullopt;
}

std::optional<std::vector<v1::MetricPoint>> Batcher::TakeIfDue(int64_t now_ms) {
  if (pending_.empty() || now_ms - oldest_ms_ < options_.max_age_ms) return std::nullopt;
  return TakeAll();
}

std::vector<v1::MetricPoint> Batcher::TakeAll() {
  std::vector<v1::MetricPoint> out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace ablate::worker
