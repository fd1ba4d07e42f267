// Wakes the client's watch streams (WatchSweep, WatchRun) without a thread per stream (issue 28).
//
// A stream that has told its client what its last poll found parks here. The scheduler wakes it
// when the change feed moved past the version the stream saw, or `tick` after it parked when
// nothing changed, but never sooner than `min_interval` after the stream's previous poll (a burst
// of changes costs one poll); when the feed closes (shutdown) or the stream's call is cancelled,
// at once. This is what each synchronous handler used to do on its own thread (ChangeFeed::
// WaitPast, then a sleep). A woken stream runs its next poll on a fixed pool of `threads` threads
// (a poll reads the store); one timer thread does the waking and learns of changes from a feed
// listener. So the coordinator's threads do not grow with its watchers: 1 + `threads` for any
// number of streams.
#ifndef ABLATE_SERVER_RPC_WATCH_SCHEDULER_H_
#define ABLATE_SERVER_RPC_WATCH_SCHEDULER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/change_feed.h"
#include "server/rpc/stream_pool.h"

namespace ablate {

class WatchScheduler {
 public:
  using Clock = std::chrono::steady_clock;

  // One watch stream, as the scheduler sees it. The scheduler holds a stream only between Park
  // (or RunNow) and its Wake, so a stream may delete itself once it finished its call.
  class Stream {
   public:
    virtual ~Stream() = default;
    // On the pool: the stream's next poll; `version` is the feed's version when it woke.
    virtual void Wake(uint64_t version) = 0;
    // Any thread: true once the stream's call was cancelled (it is then woken at once).
    virtual bool Cancelled() const = 0;
  };

  struct Options {
    std::chrono::milliseconds min_interval{250};
    std::chrono::milliseconds tick{1000};
    int threads = 4;
  };

  // `feed` must outlive the scheduler. Starts the timer thread and the pool.
  WatchScheduler(ChangeFeed* feed, Options options);
  // Stops listening to the feed and the timer; streams still parked are dropped (the service's
  // server has finished every call by then). Runs the wakes already queued on the pool.
  ~WatchScheduler();
  WatchScheduler(const WatchScheduler&) = delete;
  WatchScheduler& operator=(const WatchScheduler&) = delete;

  // Runs `stream->Wake(feed version now)` on the pool (a stream's first poll).
  void RunNow(Stream* stream);

  // Parks `stream` until the feed's version differs from `seen` (or `tick` passed, or the feed
  // closed) and `not_before` has come (unless the feed closed), or until its call is cancelled;
  // then runs its Wake on the pool. The caller must not touch the stream after this call: its
  // Wake may already be running.
  void Park(Stream* stream, uint64_t seen, Clock::time_point not_before);

  // Any thread, after a stream's Cancelled() turned true: wakes it at once if it is parked.
  void Poke();

  int threads() const { return pool_->threads() + 1; }
  size_t parked() const;  // streams parked now (tests)

 private:
  struct Parked {
    Stream* stream;
    uint64_t seen;
    Clock::time_point deadline;    // `tick` after it parked: wakes even if nothing changed
    Clock::time_point not_before;  // its previous poll + min_interval
    bool moved;                    // the feed moved past `seen` (or the deadline passed)
  };

  void OnFeed(bool closed);
  void TimerLoop();
  // Wakes what is due, under the lock; returns when to look again.
  Clock::time_point Scan(uint64_t version, bool closed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ChangeFeed* const feed_;
  const Options options_;
  // The timer waits on mu_ itself (Mutex::Await): every flag it waits for is set under it.
  mutable absl::Mutex mu_;
  std::vector<Parked> parked_ ABSL_GUARDED_BY(mu_);
  bool feed_wait_ ABSL_GUARDED_BY(mu_) = false;  // a parked stream waits for the feed to move
  bool poked_ ABSL_GUARDED_BY(mu_) = false;      // look again before `planned_`
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Clock::time_point planned_ ABSL_GUARDED_BY(mu_);  // when the timer looks again
  std::unique_ptr<StreamPool> pool_;
  int listener_ = -1;
  std::thread timer_;  // last: starts after the members above exist
};

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_WATCH_SCHEDULER_H_
