// Writer: one thread, batched transactions, per-job savepoints, per-job completion signals.
#include "server/store/writer.h"

#include <utility>

namespace ablate {

Writer::Writer(std::unique_ptr<Connection> connection, int max_batch, std::function<void()> on_lost)
    : connection_(std::move(connection)),
      max_batch_(max_batch < 1 ? 1 : max_batch),
      on_lost_(std::move(on_lost)),
      thread_([this] { Loop(); }) {}

Writer::~Writer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

bool Writer::Enqueue(Pending* pending) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return false;
  if (tail_ == nullptr) {
    head_ = pending;
  } else {
    tail_->next = pending;
  }
  tail_ = pending;
  return true;
}

bool Writer::Post(OwnedJob job, Done done) {
  auto pending = std::make_unique<Pending>(std::move(job), std::move(done));
  if (!Enqueue(pending.get())) return false;
  pending.release();  // the writer thread deletes it once it ran
  return true;
}

absl::Status Writer::Write(Job job) {
  Pending pending(job);
  if (!Enqueue(&pending)) return absl::FailedPreconditionError("the store is closing");
  // Only the writer thread notifies this, after it has set `status`; nobody else is woken.
  pending.done.WaitForNotification();
  return pending.status;
}

int64_t Writer::transactions() const {
  absl::MutexLock lock(&mu_);
  return transactions_;
}

bool Writer::HasWorkOrStopping() const { return head_ != nullptr || stopping_; }

void Writer::TakeBatch(std::vector<Pending*>& batch) {
  while (head_ != nullptr && static_cast<int>(batch.size()) < max_batch_) {
    batch.push_back(head_);
    head_ = head_->next;
  }
  if (head_ == nullptr) tail_ = nullptr;
}

void Writer::Loop() {
  std::vector<Pending*> batch;  // reused: its capacity settles at the largest batch seen
  batch.reserve(static_cast<size_t>(max_batch_));
  while (true) {
    batch.clear();
    {
      absl::MutexLock lock(&mu_, absl::Condition(this, &Writer::HasWorkOrStopping));
      if (head_ == nullptr) return;  // stopping, and nothing left to do
      TakeBatch(batch);
    }
    RunBatch(batch);
    {
      absl::MutexLock lock(&mu_);
      ++transactions_;
    }
    // After Notify a caller may return and destroy its Pending: touch nothing of it afterwards.
    for (Pending* pending : batch) {
      if (pending->detached) {
        if (pending->on_done) pending->on_done(pending->status);
        delete pending;
      } else {
        pending->done.Notify();
      }
    }
  }
}

void Writer::RunBatch(const std::vector<Pending*>& batch) {
  absl::Status begin = connection_->ExecCached("BEGIN IMMEDIATE");
  if (!begin.ok()) return LoseBatch(batch, begin);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]->status = RunInSavepoint(*batch[i]);
    if (!connection_->InTransaction()) {
      // SQLite rolled the whole transaction back (I/O error, disk full): every job is lost.
      return LoseBatch(batch, batch[i]->status.ok()
                                  ? absl::UnavailableError("transaction rolled back by SQLite")
                                  : batch[i]->status);
    }
  }
  absl::Status commit = connection_->ExecCached("COMMIT");
  if (commit.ok()) return;
  // The transaction is lost as a whole: nobody's write is durable.
  connection_->ExecCached("ROLLBACK").IgnoreError();
  LoseBatch(batch, commit);
}

void Writer::LoseBatch(const std::vector<Pending*>& batch, const absl::Status& why) {
  if (on_lost_) on_lost_();
  // A job that failed on its own keeps its own error; every other one gets the transaction's.
  for (Pending* pending : batch) {
    if (pending->status.ok()) pending->status = why;
  }
}

absl::Status Writer::RunInSavepoint(Pending& pending) {
  absl::Status status = connection_->ExecCached("SAVEPOINT job");
  if (!status.ok()) return status;
  status = pending.job(*connection_);
  if (!status.ok()) {
    // Undo this job only; the batch's other jobs keep their effects.
    connection_->ExecCached("ROLLBACK TO job").IgnoreError();
  }
  absl::Status release = connection_->ExecCached("RELEASE job");
  return status.ok() ? release : status;
}

}  // namespace ablate
