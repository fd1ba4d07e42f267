// A version counter that writers bump after committing a change and watchers wait on, so that
// streaming RPCs (WatchSweep, WatchRun) and server-sent events wake up promptly instead of
// polling blindly. Thread-safe.
#ifndef ABLATE_SERVER_CORE_CHANGE_FEED_H_
#define ABLATE_SERVER_CORE_CHANGE_FEED_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace ablate {

class ChangeFeed {
 public:
  // Records that something changed and wakes every waiter.
  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++version_;
    }
    cv_.notify_all();
  }

  uint64_t version() const {
    std::lock_guard<std::mutex> lock(mu_);
    return version_;
  }

  // Blocks until the version differs from `seen`, `timeout` passes, or Close() is called.
  // Returns the current version.
  uint64_t WaitPast(uint64_t seen, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return version_ != seen || closed_; });
    return version_;
  }

  // Wakes every waiter for good (shutdown).
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  bool closed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_CHANGE_FEED_H_
