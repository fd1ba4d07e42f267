// StreamPool: a fixed thread pool with one FIFO queue.
#include "server/rpc/stream_pool.h"

#include <utility>

namespace ablate {

StreamPool::StreamPool(int threads) {
  const int n = threads < 1 ? 1 : threads;
  threads_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
}

StreamPool::~StreamPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void StreamPool::Submit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

bool StreamPool::HasWorkOrStopping() const { return !tasks_.empty() || stopping_; }

void StreamPool::Loop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_, absl::Condition(this, &StreamPool::HasWorkOrStopping));
      if (tasks_.empty()) return;  // stopping, and nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace ablate
