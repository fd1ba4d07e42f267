// The store's single writer: write jobs from any thread run on one thread, several per
// transaction, and each caller learns the outcome of its own job once it is committed.
#ifndef ABLATE_SERVER_STORE_WRITER_H_
#define ABLATE_SERVER_STORE_WRITER_H_

#include <cstdint>
#include <functional>
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
// Group commit: whatever is queued when a transaction begins (blocking Write()s from any number
// of threads, and Post()ed jobs) is committed together, and no caller learns of success before
// that COMMIT has returned.
class Writer {
 public:
  // Borrowed for the duration of Write(), which blocks until the job has run: a lambda passed
  // inline lives long enough.
  using Job = absl::FunctionRef<absl::Status(Connection&)>;

  // An owned job, and what learns its outcome, for Post().
  using OwnedJob = std::function<absl::Status(Connection&)>;
  using Done = std::function<void(const absl::Status&)>;

  // `on_lost`, when set, runs on the writer thread each time a transaction does not commit
  // (BEGIN or COMMIT failed, or SQLite rolled it back), before the callers hear of it: what was
  // read inside it may describe writes that are gone (FenceCache).
  Writer(std::unique_ptr<Connection> connection, int max_batch,
         std::function<void()> on_lost = nullptr);
  // Runs the jobs already queued, then stops the thread.
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Queues `job` and blocks until the transaction holding it has committed (OK), or returns the
  // job's own error, or the error of BEGIN/COMMIT. FAILED_PRECONDITION once the writer is
  // stopping.
  absl::Status Write(Job job);

  // Queues `job` without waiting: it runs in the next transaction, in queue order with every
  // other job (a later Write() from the same thread commits in the same transaction or after
  // it). `done`, when given, gets the outcome Write() would have returned, on the writer thread
  // after the transaction ended: it must be short and must not call back into the Writer.
  // False (and nothing queued, `done` not called) once the writer is stopping.
  bool Post(OwnedJob job, Done done = nullptr);

  // Number of transactions committed so far (for tests of batching).
  int64_t transactions() const;

 private:
  // Lives on the caller's stack for the duration of Write(); linked into the queue by `next`, so
  // queueing allocates nothing.
  struct Pending {
    explicit Pending(Job j) : job(j) {}
    // Post(): the job lives here, and the writer deletes the Pending once it ran.
    Pending(OwnedJob j, Done d)
        : owned(std::make_unique<OwnedJob>(std::move(j))),
          job(*owned),
          detached(true),
          on_done(std::move(d)) {}
    std::unique_ptr<OwnedJob> owned;  // before `job`, which refers to it
    Job job;
    const bool detached = false;
    Done on_done;             // Post() only
    absl::Status status;      // written by the writer thread before `done` is notified
    Pending* next = nullptr;  // guarded by mu_ while queued
    absl::Notification done;
  };

  // Links `pending` at the tail; false when stopping.
  bool Enqueue(Pending* pending);
  void Loop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unlinks up to max_batch_ jobs from the head of the queue into `batch`.
  void TakeBatch(std::vector<Pending*>& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunBatch(const std::vector<Pending*>& batch);
  // RunBatch's outcome for every job when the transaction as a whole is lost.
  void LoseBatch(const std::vector<Pending*>& batch, const absl::Status& why);
  absl::Status RunInSavepoint(Pending& pending);

  const std::unique_ptr<Connection> connection_;  // used only by the writer thread
  const int max_batch_;
  const std::function<void()> on_lost_;  // called on the writer thread only
  mutable absl::Mutex mu_;
  Pending* head_ ABSL_GUARDED_BY(mu_) = nullptr;  // oldest queued job
  Pending* tail_ ABSL_GUARDED_BY(mu_) = nullptr;  // newest queued job
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t transactions_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_WRITER_H_
