// Groups a run's metric points into batches: a batch is cut when it holds max_points points or when
// its oldest point is max_age_ms old, whichever comes first (DESIGN §4, worker-side batching).
#ifndef ABLATE_WORKER_BATCHER_H_
#define ABLATE_WORKER_BATCHER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "ablate/v1/types.pb.h"

namespace ablate::worker {

struct BatcherOptions {
  int max_points = 100;
  int64_t max_age_ms = 500;
};

// Not thread-safe: the owner serialises calls. Times are caller-supplied milliseconds on any
// monotonic clock, so tests drive it with a fake clock.
class Batcher {
 public:
  explicit Batcher(BatcherOptions options = {}) : options_(options) {}

  // Adds a point. A point for the same step as the last pending one is merged into it (a val
  // event follows the step event of the same step). Returns a full batch when one is cut.
  std::optional<std::vector<v1::MetricPoint>> Add(const v1::MetricPoint& point, int64_t now_ms);
  // Returns the pending batch if its oldest point is at least max_age_ms old.
  std::optional<std::vector<v1::MetricPoint>> TakeIfDue(int64_t now_ms);
  // Returns whatever is pending (possibly empty).
  std::vector<v1::MetricPoint> TakeAll();
  bool empty() const { return pending_.empty(); }

 private:
  BatcherOptions options_;
  std::vector<v1::MetricPoint> pending_;
  int64_t oldest_ms_ = 0;
};

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_BATCHER_H_
