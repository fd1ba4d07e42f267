// ConnectionPool: reuse reader connections, open more under load.
#include "server/store/connection_pool.h"

#include <utility>

namespace ablate {

ConnectionPool::ConnectionPool(Factory factory, int max_idle)
    : factory_(std::move(factory)), max_idle_(max_idle) {}

ConnectionPool::Lease::~Lease() {
  if (connection_ != nullptr) pool_->Release(std::move(connection_));
}

absl::StatusOr<ConnectionPool::Lease> ConnectionPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Connection> connection = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(connection));
    }
  }
  // Opened outside the lock: opening touches the file system.
  absl::StatusOr<std::unique_ptr<Connection>> connection = factory_();
  if (!connection.ok()) return connection.status();
  return Lease(this, std::move(*connection));
}

void ConnectionPool::Release(std::unique_ptr<Connection> connection) {
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(idle_.size()) < max_idle_) idle_.push_back(std::move(connection));
  // Otherwise the connection closes here; closing is cheap for a reader (no checkpoint work).
}

}  // namespace ablate
