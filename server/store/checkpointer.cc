#include "server/store/checkpointer.h"

#include <utility>

namespace ablate {

Checkpointer::Checkpointer(std::unique_ptr<Connection> connection, sqlite3* writer_db, int pages,
                           int inline_pages)
    : connection_(std::move(connection)),
      pages_(pages),
      inline_pages_(inline_pages),
      thread_([this] { Loop(); }) {
  // Replaces the automatic checkpoint (sqlite3_wal_autocheckpoint is itself a WAL hook).
  sqlite3_wal_hook(writer_db, &Checkpointer::OnCommit, this);
}

Checkpointer::~Checkpointer() {
  // Not unhooked: the writer's connection is closed by now.
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

int Checkpointer::OnCommit(void* arg, sqlite3* db, const char* schema, int pages) {
  auto* self = static_cast<Checkpointer*>(arg);
  if (pages >= self->inline_pages_) {
    // Behind by far: as SQLite's automatic checkpoint would (errors, such as a full disk, are
    // left for the next commit, as SQLite leaves them).
    int log = 0, copied = 0;
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
    absl::MutexLock lock(&self->mu_);
    ++self->inline_;
    return SQLITE_OK;
  }
  if (pages >= self->pages_) {
    absl::MutexLock lock(&self->mu_);
    self->wanted_ = true;
  }
  return SQLITE_OK;
}

void Checkpointer::Loop() {
  auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wanted_ || stopping_; };
  auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  absl::Time last = absl::InfinitePast();
  while (true) {
    {
      absl::MutexLock lock(&mu_, absl::Condition(&woken));
      if (stopping_) return;
      // At most one checkpoint per kGap: every commit past `pages_` asks for one until the log
      // starts over, which may take a few checkpoints (see kGap).
      const absl::Time next = last + kGap;
      if (absl::Now() < next) mu_.AwaitWithDeadline(absl::Condition(&stopping), next);
      if (stopping_) return;
      wanted_ = false;
    }
    last = absl::Now();
    // PASSIVE: copies what no reader still needs, without waiting for anyone. SQLITE_BUSY (a
    // checkpoint already running) and I/O errors are tried again after the next long commit.
    int log = 0, copied = 0;
    const int rc = sqlite3_wal_checkpoint_v2(connection_->handle(), nullptr,
                                             SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
    if (rc == SQLITE_OK && copied > 0) {
      absl::MutexLock lock(&mu_);
      ++background_;
    }
  }
}

void Checkpointer::Request() {
  absl::MutexLock lock(&mu_);
  wanted_ = true;
}

int64_t Checkpointer::background_checkpoints() const {
  absl::MutexLock lock(&mu_);
  return background_;
}

int64_t Checkpointer::inline_checkpoints() const {
  absl::MutexLock lock(&mu_);
  return inline_;
}

}  // namespace ablate
