// The store's single writer: write jobs from any thread run on one thread, several per
// transaction, and each caller learns the outcome of its own job once it is committed.
#ifndef ABLATE_SERVER_STORE_WRITER_H_
#define ABLATE_SERVER_STORE_WRITER_H_

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/store/connection.h"

namespace ablate {

// Thread-safe. The writer thread drains the queue in batches of up to `max_batch` jobs: BEGIN
// IMMEDIATE, each job inside its own SAVEPOINT, COMMIT. A job that fails is rolled back to its
// savepoint and its error goes to its caller alone; the others in the batch still commit. If the
// COMMIT itself fails, every job of the batch gets that error. A job must not begin or end
// transactions itself, and must not call back into the Writer (it would deadlock).
class Writer {
 public:
  using Job = std::function<absl::Status(Connection&)>;

  Writer(std::unique_ptr<Connection> connection, int max_batch);
  // Runs the jobs already queued, then stops the thread.
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Queues `job` and blocks until the transaction holding it has committed (OK), or returns the
  // job's own error, or the error of BEGIN/COMMIT. FAILED_PRECONDITION once the writer is
  // stopping.
  absl::Status Write(Job job);

  // Number of transactions committed so far (for tests of batching).
  int64_t transactions() const;

 private:
  struct Pending {
    Job job;
    absl::Status status;
    bool done = false;
  };

  void Loop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunBatch(const std::vector<Pending*>& batch);
  absl::Status RunInSavepoint(Pending& pending);

  const std::unique_ptr<Connection> connection_;  // used only by the writer thread
  const int max_batch_;
  mutable absl::Mutex mu_;
  std::deque<Pending*> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t transactions_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_WRITER_H_
