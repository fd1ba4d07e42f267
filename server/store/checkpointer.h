// Copies the write-ahead log back into the database file on a thread and connection of its own,
// so that the store's writer never pays for a checkpoint between a commit and its callers' Acks.
#ifndef ABLATE_SERVER_STORE_CHECKPOINTER_H_
#define ABLATE_SERVER_STORE_CHECKPOINTER_H_

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/store/connection.h"

namespace ablate {

// SQLite checkpoints a WAL database on the committing connection by default: every commit that
// leaves the log at 1,000 pages or more copies the log into the database file before COMMIT
// returns. With the store's one writer that stalls every caller of the next transactions (under
// 10,000 single-point batches a second the writer fell ever further behind:
// bench/coordinator/NOTES.md). The Checkpointer takes that over: the writer's connection only
// tells it how long the log is after each commit (its WAL hook replaces SQLite's automatic
// checkpoint), and its own thread runs PASSIVE checkpoints, which neither wait for nor block the
// writer or the readers. Should it fall behind (or fail: a full disk), the writer checkpoints
// itself once the log reaches `inline_pages`, as SQLite would have, so the log stays bounded.
//
// On a data dir with little room the page thresholds come too late: a checkpoint copies the log
// into the database file, which grows by up to the log's size, so a log that has taken the disk's
// last free bytes can never be copied, never start over, and the store can write nothing again
// (an 8 MiB data dir wedged that way for good, the filler that first filled it long gone). Given
// `free_bytes` (what the data dir's file system has free), the writer's hook asks the thread for a
// checkpoint once the log is a quarter of what is free and checkpoints itself at half, so the copy
// always fits.
//
// Thread-safe. Must outlive every commit on `writer_db` (destroy the writer first).
class Checkpointer {
 public:
  // 32 MiB of log at 4 KiB pages before the thread checkpoints. A page that many commits changed
  // (the tail of a run's points) is copied once per checkpoint, so fewer, larger checkpoints copy
  // far less than SQLite's 1,000 pages did (500 runs at 20 steps/s, send->Ack p99: 0.26-0.8 s
  // with SQLite's checkpoint on the writer, 0.3-0.5 s with 1,000 pages on this thread, 0.12-0.13 s
  // with 8,000; bench/coordinator/NOTES.md).
  static constexpr int kPages = 8'000;
  static constexpr int kInlinePages = 32'000;  // 128 MiB: the thread is far behind, or failing
  // The shortest time between two of the thread's checkpoints. Each one syncs the log and the
  // database file. The log starts over only at a commit that finds it wholly copied and no reader
  // in it, so under a steady stream of commits the first checkpoint past `pages` is followed by
  // more; back to back they were ~40 fdatasyncs in 0.2 s, and the store writer's own writes
  // queued behind them (500 runs at 20 steps/s: 137 syncs in 8.5 s, 31 with this gap;
  // bench/coordinator/NOTES.md). At 10,000 single-point batches a second the log grows by about
  // 2,000 pages in one gap.
  static constexpr absl::Duration kGap = absl::Milliseconds(100);
  // The free space is asked (one statvfs) after each commit that grew the log by this many pages
  // since the last ask, or that found it started over.
  static constexpr int kFreeCheckPages = 64;

  // Bytes free on the database's file system, or < 0 when unknown (no space check then).
  using FreeBytes = std::function<int64_t()>;
  // The free space of the file system that holds `dir` (statvfs: what an unprivileged writer may
  // still use).
  static FreeBytes FreeBytesOf(std::string dir);

  // Takes `connection` (writable, same database as `writer_db`) and hooks `writer_db`. Without
  // `free_bytes`, only the page thresholds ask for checkpoints.
  Checkpointer(std::unique_ptr<Connection> connection, sqlite3* writer_db, int pages = kPages,
               int inline_pages = kInlinePages, FreeBytes free_bytes = {});
  // Stops the thread. The writer's connection must be closed first (it calls into this object).
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Asks the thread for a checkpoint whatever the log's length. The store calls it when a commit
  // fails for a full disk: on a disk with less room than `pages` of log nothing else would copy
  // the log back, the log would never start over, and the disk would stay full for good (the
  // log alone filled an 8 MiB data dir that way). Once space is back, the next failed commit's
  // request copies the log, and the commit after it writes the log from its start again.
  void Request();

  // Checkpoints this thread ran that copied pages, and those the writer ran itself (for tests
  // and benches).
  int64_t background_checkpoints() const;
  int64_t inline_checkpoints() const;

 private:
  // The WAL hook: runs on the writer's thread after each commit, `pages` the log's length.
  static int OnCommit(void* self, sqlite3* db, const char* schema, int pages);
  void Loop();

  const std::unique_ptr<Connection> connection_;  // used by the thread only
  const int pages_;
  const int inline_pages_;
  const FreeBytes free_bytes_;
  const int64_t page_bytes_;  // the database's page size
  int checked_at_ = 0;        // the log's length at the last free-space ask (the writer's thread)
  mutable absl::Mutex mu_;
  bool wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t background_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t inline_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_CHECKPOINTER_H_
