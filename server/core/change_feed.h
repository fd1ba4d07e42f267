// A version counter that writers bump after committing a change and watchers wait on, so that
// streaming RPCs (WatchSweep, WatchRun) and server-sent events wake up promptly instead of
// polling blindly. Thread-safe.
#ifndef ABLATE_SERVER_CORE_CHANGE_FEED_H_
#define ABLATE_SERVER_CORE_CHANGE_FEED_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ablate {

class ChangeFeed {
 public:
  // Records that something changed and wakes every waiter (and calls the listeners).
  void Notify() {
    {
      absl::MutexLock lock(&mu_);
      ++version_;
    }
    CallListeners(/*closed=*/false);
  }

  // Calls `listener` on the notifying thread after every Notify() (closed = false) and on
  // Close() (closed = true), from when AddListener returns until RemoveListener(id) returned.
  // This is how a waiter that holds no thread of its own (WatchScheduler) learns of changes.
  // `listener` must be quick (it runs on every change: thousands a second under load), may take
  // a short lock but must not wait for anything else, and must not call this feed's Notify,
  // Close, AddListener or RemoveListener.
  int AddListener(std::function<void(bool closed)> listener) {
    absl::MutexLock lock(&listeners_mu_);
    const int id = next_listener_++;
    listeners_.emplace(id, std::move(listener));
    return id;
  }

  // After it returns the listener is not running and is never called again.
  void RemoveListener(int id) {
    absl::MutexLock lock(&listeners_mu_);
    listeners_.erase(id);
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
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    CallListeners(/*closed=*/true);
  }

  bool closed() const {
    absl::MutexLock lock(&mu_);
    return closed_;
  }

 private:
  void CallListeners(bool closed) {
    absl::ReaderMutexLock lock(&listeners_mu_);
    for (const auto& [id, listener] : listeners_) listener(closed);
  }

  // Waiters wait on mu_ itself (Mutex::AwaitWithTimeout): every change is made under it.
  mutable absl::Mutex mu_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Readers (CallListeners) share it: notifying threads do not queue behind each other.
  absl::Mutex listeners_mu_;
  std::map<int, std::function<void(bool closed)>> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  int next_listener_ ABSL_GUARDED_BY(listeners_mu_) = 0;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_CHANGE_FEED_H_
