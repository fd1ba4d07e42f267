// A fixed set of threads that does the blocking work (store writes, dispatcher calls) of any
// number of gRPC callback streams, so that the coordinator's thread count does not grow with its
// streams (issue 28). Each stream keeps its own order by having at most one task queued or
// running at a time (WorkerServiceImpl's streams do so).
#ifndef ABLATE_SERVER_RPC_STREAM_POOL_H_
#define ABLATE_SERVER_RPC_STREAM_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ablate {

// Thread-safe. Tasks run in submission order on `threads` threads (at least 1). The destructor
// runs every task already submitted, then joins the threads; Submit after that is a bug.
class StreamPool {
 public:
  explicit StreamPool(int threads);
  ~StreamPool();
  StreamPool(const StreamPool&) = delete;
  StreamPool& operator=(const StreamPool&) = delete;

  void Submit(std::function<void()> task);
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // last: they start after the members above exist
};

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_STREAM_POOL_H_
