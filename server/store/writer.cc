// Writer: one thread, batched transactions, per-job savepoints.
#include "server/store/writer.h"

#include <utility>

namespace ablate {

Writer::Writer(std::unique_ptr<Connection> connection, int max_batch)
    : connection_(std::move(connection)),
      max_batch_(max_batch < 1 ? 1 : max_batch),
      thread_([this] { Loop(); }) {}

Writer::~Writer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

absl::Status Writer::Write(Job job) {
  Pending pending{std::move(job), absl::OkStatus(), false};
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::FailedPreconditionError("the store is closing");
  queue_.push_back(&pending);
  mu_.Await(absl::Condition(&pending.done));
  return pending.status;
}

int64_t Writer::transactions() const {
  absl::MutexLock lock(&mu_);
  return transactions_;
}

bool Writer::HasWorkOrStopping() const { return !queue_.empty() || stopping_; }

void Writer::Loop() {
  while (true) {
    std::vector<Pending*> batch;
    {
      absl::MutexLock lock(&mu_, absl::Condition(this, &Writer::HasWorkOrStopping));
      if (queue_.empty()) return;  // stopping, and nothing left to do
      while (!queue_.empty() && static_cast<int>(batch.size()) < max_batch_) {
        batch.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    RunBatch(batch);
    absl::MutexLock lock(&mu_);
    ++transactions_;
    for (Pending* pending : batch) pending->done = true;
  }
}

void Writer::RunBatch(const std::vector<Pending*>& batch) {
  absl::Status begin = connection_->Exec("BEGIN IMMEDIATE");
  if (!begin.ok()) {
    for (Pending* pending : batch) pending->status = begin;
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]->status = RunInSavepoint(*batch[i]);
    if (!connection_->InTransaction()) {
      // SQLite rolled the whole transaction back (I/O error, disk full): every job is lost.
      absl::Status lost = batch[i]->status.ok()
                              ? absl::UnavailableError("transaction rolled back by SQLite")
                              : batch[i]->status;
      for (Pending* pending : batch) {
        if (pending->status.ok() || pending == batch[i]) pending->status = lost;
      }
      return;
    }
  }
  absl::Status commit = connection_->Exec("COMMIT");
  if (commit.ok()) return;
  // The transaction is lost as a whole: nobody's write is durable.
  connection_->Exec("ROLLBACK").IgnoreError();
  for (Pending* pending : batch) {
    if (pending->status.ok()) pending->status = commit;
  }
}

absl::Status Writer::RunInSavepoint(Pending& pending) {
  absl::Status status = connection_->Exec("SAVEPOINT job");
  if (!status.ok()) return status;
  status = pending.job(*connection_);
  if (!status.ok()) {
    // Undo this job only; the batch's other jobs keep their effects.
    connection_->Exec("ROLLBACK TO job").IgnoreError();
  }
  absl::Status release = connection_->Exec("RELEASE job");
  return status.ok() ? release : status;
}

}  // namespace ablate
