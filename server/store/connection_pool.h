// A small pool of reader connections, so that reads never wait for the writer thread and no
// connection is used by two threads at once.
#ifndef ABLATE_SERVER_STORE_CONNECTION_POOL_H_
#define ABLATE_SERVER_STORE_CONNECTION_POOL_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/store/connection.h"

namespace ablate {

// Thread-safe. Acquire() hands out an idle connection or opens a new one (there is no upper
// bound on connections in use: each concurrent reader gets its own); at most `max_idle` are kept
// when returned. The pool must outlive its leases.
class ConnectionPool {
 public:
  using Factory = std::function<absl::StatusOr<std::unique_ptr<Connection>>()>;

  // Exclusive use of one connection until destroyed.
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<Connection> connection)
        : pool_(pool), connection_(std::move(connection)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Connection& operator*() const { return *connection_; }
    Connection* operator->() const { return connection_.get(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<Connection> connection_;
  };

  ConnectionPool(Factory factory, int max_idle);

  // Errors are those of the factory (opening a connection).
  absl::StatusOr<Lease> Acquire();

 private:
  void Release(std::unique_ptr<Connection> connection);

  const Factory factory_;
  const int max_idle_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_CONNECTION_POOL_H_
