// One store poll per sweep and interval, shared by every WatchSweep stream on that sweep.
//
// Each `ablate watch` stream used to read the sweep, its run counts, all its runs and its new
// events on its own, four times a second: 200 of them on a 200-run sweep made ~3,000 reads a
// second while the runs' metric batches waited for the same cores. Now the first stream that
// asks after the interval polls for all of them, and each stream diffs the shared snapshot
// against what it told its own client (bench/coordinator/NOTES.md, "Under readers").
#ifndef ABLATE_SERVER_RPC_SWEEP_WATCH_CACHE_H_
#define ABLATE_SERVER_RPC_SWEEP_WATCH_CACHE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ablate/v1/types.pb.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "server/store/store.h"

namespace ablate {

class SweepWatchCache {
 public:
  // What one poll of a sweep read.
  struct Snapshot {
    uint64_t number = 0;  // grows by one with each poll of the sweep
    v1::Sweep sweep;      // as FillSweep(id, full=false) answers
    std::vector<Run> runs;
    // Every event of the sweep with events_floor < id <= the newest read so far, in id order
    // (the latest kKeptEvents at most; a stream further behind reads the store itself).
    std::vector<Event> events;
    int64_t events_floor = 0;
  };
  static constexpr size_t kKeptEvents = 2000;
  static constexpr int kEventsPerPoll = 1000;
  static constexpr int kMaxRuns = 100000;

  // One sweep's shared poll; a stream keeps its handle while it runs.
  class Entry {
   public:
    // The latest snapshot, polling the store first when the previous poll is `min_interval` old.
    // NOT_FOUND for an unknown sweep.
    absl::StatusOr<std::shared_ptr<const Snapshot>> Get();

   private:
    friend class SweepWatchCache;
    Entry(SweepWatchCache* cache, int64_t sweep_id) : cache_(cache), sweep_id_(sweep_id) {}
    SweepWatchCache* const cache_;
    const int64_t sweep_id_;
    std::mutex mu_;
    std::chrono::steady_clock::time_point polled_ ABSL_GUARDED_BY(mu_);
    std::shared_ptr<const Snapshot> latest_ ABSL_GUARDED_BY(mu_);
  };

  using FillSweep = std::function<absl::Status(int64_t sweep_id, v1::Sweep* out)>;
  // `store` must outlive this object.
  SweepWatchCache(Store* store, FillSweep fill_sweep, std::chrono::milliseconds min_interval);

  // The sweep's shared poll, created on first use and dropped when no stream holds it.
  std::shared_ptr<Entry> Acquire(int64_t sweep_id);

  // Store polls made so far (tests).
  uint64_t polls() const;

 private:
  Store* const store_;
  const FillSweep fill_sweep_;
  const std::chrono::milliseconds min_interval_;
  mutable std::mutex mu_;
  std::map<int64_t, std::weak_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t polls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_SWEEP_WATCH_CACHE_H_
