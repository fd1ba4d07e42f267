// One coordinator per data dir: an exclusive lock on `<data dir>/ablate.lock` held for the life
// of the process. Two coordinators on one database would both dispatch the same queued runs.
#ifndef ABLATE_SERVER_STORE_DATA_DIR_LOCK_H_
#define ABLATE_SERVER_STORE_DATA_DIR_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ablate {

// Holds flock(LOCK_EX) on the lock file until destroyed. The kernel releases the lock when the
// process dies in any way (SIGKILL included), so a crashed coordinator never blocks its restart;
// the file itself stays and is reused. The holder's PID is written into the file so that a
// refused process can name it. Not copyable; not thread-safe (one owner).
class DataDirLock {
 public:
  static constexpr const char* kFileName = "ablate.lock";

  // Takes the lock of `data_dir` (which must exist) without waiting. FAILED_PRECONDITION naming
  // the data dir and the holder's PID when another process holds it; UNAVAILABLE when the lock
  // file cannot be opened or written.
  static absl::StatusOr<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_DATA_DIR_LOCK_H_
