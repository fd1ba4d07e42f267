#include "server/store/checkpointer.h"

#include <sys/statvfs.h>

#include <utility>

namespace ablate {
namespace {

int64_t PageBytes(Connection& c) {
  absl::StatusOr<Statement> stmt = c.Prepare("PRAGMA page_size");
  if (!stmt.ok() || !stmt->Step().value_or(false)) return 4096;  // SQLite's default
  return stmt->Int(0) > 0 ? stmt->Int(0) : 4096;
}

}  // namespace

Checkpointer::FreeBytes Checkpointer::FreeBytesOf(std::string dir) {
  return [dir = std::move(dir)]() -> int64_t {
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) != 0) return -1;
    return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
  };
}

Checkpointer::Checkpointer(std::unique_ptr<Connection> connection, sqlite3* writer_db, int pages,
                           int inline_pages, FreeBytes free_bytes)
    : connection_(std::move(connection)),
      pages_(pages),
      inline_pages_(inline_pages),
      free_bytes_(std::move(free_bytes)),
      page_bytes_(PageBytes(*connection_)),
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
  bool inline_now = pages >= self->inline_pages_;
  bool wanted = pages >= self->pages_;
  if (!inline_now && self->free_bytes_ &&
      (pages < self->checked_at_ || pages - self->checked_at_ >= kFreeCheckPages)) {
    // A copy grows the database file by up to the log's size: ask the thread while the log is a
    // quarter of the free room, and copy it here, at once, once it is half (the thread waits
    // kGap between checkpoints, in which a fast writer can write megabytes).
    self->checked_at_ = pages;
    const int64_t free = self->free_bytes_();
    const int64_t log = static_cast<int64_t>(pages) * self->page_bytes_;
    if (free >= 0) {
      inline_now = 2 * log >= free;
      wanted = wanted || 4 * log >= free;
    }
  }
  if (inline_now) {
    // Behind by far, or short of room: as SQLite's automatic checkpoint would (errors, such as a
    // full disk, are left for the next commit, as SQLite leaves them).
    int log = 0, copied = 0;
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
    absl::MutexLock lock(&self->mu_);
    ++self->inline_;
    return SQLITE_OK;
  }
  if (wanted) {
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
