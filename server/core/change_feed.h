// A version counter that writers bump after committing a change and watchers wait on, so that
// streaming RPCs (WatchSweep, WatchRun) and server-sent events wake up promptly instead of
// polling blindly. Thread-safe.
#ifndef ABLATE_SERVER_CORE_CHANGE_FEED_H_
#define ABLATE_SERVER_CORE_CHANGE_FEED_H_

#include <chrono>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ablate {

class ChangeFeed {
 public:
  // Records that something changed and wakes every waiter.
  void Notify() {
    absl::MutexLock lock(&mu_);
    ++version_;
  }

  uint64_t version() const {
    absl::MutexLock lock(&mu_);
    return version_;
  }

  // Blocks until the version differs from `seen`, `timeout` passes, or Close() is called.
  // Returns the current version.
  uint64_t WaitPast(uint64_t seen, std::chrono::milliseconds timeout) {
    absl::MutexLock lock(&mu_);
    auto moved = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return version_ != seen || closed_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&moved), absl::FromChrono(timeout));
    return version_;
  }

  // Wakes every waiter for good (shutdown).
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  bool closed() const {
    absl::MutexLock lock(&mu_);
    return closed_;
  }

 private:
  // Waiters wait on mu_ itself (Mutex::AwaitWithTimeout): every change is made under it.
  mutable absl::Mutex mu_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_CHANGE_FEED_H_
