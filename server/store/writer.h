// The store's single writer: write jobs from any thread run on one thread, several per
// transaction, and each caller learns the outcome of its own job once it is committed.
#ifndef ABLATE_SERVER_STORE_WRITER_H_
#define ABLATE_SERVER_STORE_WRITER_H_

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "server/store/connection.h"

namespace ablate {

// Thread-safe. The writer thread takes everything queued (up to `max_batch` jobs) into one
// transaction: BEGIN IMMEDIATE, each job inside its own SAVEPOINT, COMMIT. A job that fails is
// rolled back to its savepoint and its error goes to its caller alone; the others in the batch
// still commit. If the COMMIT itself fails, every job of the batch gets that error. A job must
// not begin or end transactions itself, and must not call back into the Writer (it would
// deadlock).
//
// Each caller waits on a signal of its own, so a commit wakes exactly the callers whose jobs it
// finished; the queue's mutex is held only to link or unlink jobs, never while a job runs.
class Writer {
 public:
  // Borrowed for the duration of Write(), which blocks until the job has run: a lambda passed
  // inline lives long enough.
  using Job = absl::FunctionRef<absl::Status(Connection&)>;

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
  // Lives on the caller's stack for the duration of Write(); linked into the queue by `next`, so
  // queueing allocates nothing.
  struct Pending {
    explicit Pending(Job j) : job(j) {}
    Job job;
    absl::Status status;      // written by the writer thread before `done` is notified
    Pending* next = nullptr;  // guarded by mu_ while queued
    absl::Notification done;
  };

  void Loop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unlinks up to max_batch_ jobs from the head of the queue into `batch`.
  void TakeBatch(std::vector<Pending*>& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunBatch(const std::vector<Pending*>& batch);
  absl::Status RunInSavepoint(Pending& pending);

  const std::unique_ptr<Connection> connection_;  // used only by the writer thread
  const int max_batch_;
  mutable absl::Mutex mu_;
  Pending* head_ ABSL_GUARDED_BY(mu_) = nullptr;  // oldest queued job
  Pending* tail_ ABSL_GUARDED_BY(mu_) = nullptr;  // newest queued job
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t transactions_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_WRITER_H_
