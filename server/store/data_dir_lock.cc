// DataDirLock: flock on a file beside the database, with the holder's PID inside.
#include "server/store/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ablate {
namespace {

// The PID the holder wrote, or "unknown" while it has not written it yet.
std::string HolderPid(int fd) {
  char buf[32] = {};
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  std::string pid(buf, n > 0 ? static_cast<size_t>(n) : 0);
  pid = std::string(absl::StripAsciiWhitespace(pid));
  return pid.empty() ? "unknown" : pid;
}

absl::Status WritePid(int fd) {
  std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return absl::UnavailableError(absl::StrCat("cannot write the lock file: ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& data_dir) {
  const std::string path = data_dir + "/" + kFileName;
  // O_CLOEXEC: a child process (none today) must not inherit the lock and outlive us holding it.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot open ", path, ": ", strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder = HolderPid(fd);
    close(fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "data dir ", data_dir, " is in use by another coordinator (PID ", holder,
          ", holding ", path, "); stop it first, or give this one another --data-dir"));
    }
    return absl::UnavailableError(absl::StrCat("cannot lock ", path, ": ", strerror(err)));
  }
  if (absl::Status s = WritePid(fd); !s.ok()) {
    close(fd);
    return absl::UnavailableError(absl::StrCat(path, ": ", s.message()));
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
}

DataDirLock::~DataDirLock() { close(fd_); }

}  // namespace ablate
