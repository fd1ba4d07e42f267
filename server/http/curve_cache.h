// Downsampled curves kept in memory between dashboard requests. A run's curve only grows while
// its attempt runs and never changes once the run has finished, so a request reads from SQLite
// only the points stored since the previous request, downsamples only curves that grew, and
// reuses the JSON of those that did not. A sweep overlay of 50 finished runs x 3000 steps is then
// answered without touching SQLite's metric rows at all (bench/dashboard/NOTES.md).
//
// Consistency: points are appended by step, so a curve is extended with the points after its
// last step; a run whose current attempt changed is read again from scratch, and so is a run seen
// finished for the first time (the final word on its points). Runs without a current attempt
// (queued again after a failure) are read uncached, as Store::GetMetrics does.
// Thread-safe. Memory: at most `max_points_held` raw points in all (least recently used runs go
// first); 0 disables the cache.
#ifndef ABLATE_SERVER_HTTP_CURVE_CACHE_H_
#define ABLATE_SERVER_HTTP_CURVE_CACHE_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "server/http/metrics_json.h"
#include "server/store/store.h"

namespace ablate {

class CurveCache {
 public:
  // `store` must outlive the cache.
  CurveCache(const Store* store, size_t max_points_held);

  // The JSON of `run`'s curve (AppendCurveJson: attempt_id 0 and no points for a run that never
  // had an attempt), downsampled to `max_points` per series (>= 2). `run` must be fresh from the
  // store (its state and current attempt decide what is read).
  absl::StatusOr<std::string> CurveJson(const Run& run, int max_points, const SeriesSet& series);

  // The step of the run's last stored point (INT64_MIN when none), read as CurveJson reads: a
  // cached curve is only brought up to date. Live streams start after it.
  absl::StatusOr<int64_t> LastStep(const Run& run);

 private:
  struct Entry;
  std::shared_ptr<Entry> Find(int64_t run_id);
  void Account(int64_t run_id, size_t points_now);

  const Store* const store_;
  const size_t max_points_held_;
  std::mutex mu_;
  std::map<int64_t, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::list<int64_t> lru_ ABSL_GUARDED_BY(mu_);  // front = newest
  size_t points_held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_CURVE_CACHE_H_
