// One coordinator per data dir: exclusive locks on `<data dir>/ablate.lock` and on the database
// `<data dir>/ablate.db` itself, held for the life of the process. Two coordinators on one
// database would both dispatch the same queued runs.
#ifndef ABLATE_SERVER_STORE_DATA_DIR_LOCK_H_
#define ABLATE_SERVER_STORE_DATA_DIR_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ablate {

// Holds flock(LOCK_EX) on the lock file and on the database file until destroyed. The kernel
// releases both when the process dies in any way (SIGKILL included), so a crashed coordinator
// never blocks its restart; the files stay and are reused. The holder's PID is written into the
// lock file so that a refused process can name it. The lock on the database file (SQLite locks it
// with fcntl, which flock does not touch on Linux) keeps the guarantee when the lock file has been
// deleted: the holder is then named from /proc/locks. Not copyable; not thread-safe (one owner).
class DataDirLock {
 public:
  static constexpr const char* kFileName = "ablate.lock";
  static constexpr const char* kDatabaseFileName = "ablate.db";

  // Takes the lock of `data_dir` (which must exist) without waiting. FAILED_PRECONDITION naming
  // the data dir (or the database) and the holder's PID when another process holds either lock;
  // UNAVAILABLE when a file cannot be opened, locked or written. Creates an empty ablate.db when
  // there is none.
  static absl::StatusOr<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  DataDirLock(int fd, int db_fd) : fd_(fd), db_fd_(db_fd) {}
  int fd_;
  int db_fd_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_DATA_DIR_LOCK_H_
