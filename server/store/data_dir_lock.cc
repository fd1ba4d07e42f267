// DataDirLock: flock on a file beside the database, with the holder's PID inside, and flock on
// the database file itself.
#include "server/store/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
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

// The PID holding a flock on the file open as `fd`, from /proc/locks ("1: FLOCK ADVISORY WRITE
// 4242 08:01:1234 0 EOF"); "unknown" when it cannot be told.
std::string FlockHolder(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return "unknown";
  char id[64];
  std::snprintf(id, sizeof id, "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
                static_cast<unsigned long long>(st.st_ino));
  std::ifstream locks("/proc/locks");
  std::string n, kind, mode, access, pid, file;
  std::string rest;
  while (locks >> n >> kind) {
    if (kind == "->") locks >> kind;  // a waiter's line
    locks >> mode >> access >> pid >> file;
    std::getline(locks, rest);
    if (kind == "FLOCK" && file == id && std::to_string(getpid()) != pid) return pid;
  }
  return "unknown";
}

// flock on the database file itself (created empty when missing, which SQLite reads as a new
// database): held for as long as `*fd` stays open.
absl::Status LockDatabase(const std::string& path, int* fd) {
  *fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (*fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot open ", path, ": ", strerror(errno)));
  }
  if (flock(*fd, LOCK_EX | LOCK_NB) == 0) return absl::OkStatus();
  const int err = errno;
  std::string holder = err == EWOULDBLOCK ? FlockHolder(*fd) : "";
  close(*fd);
  *fd = -1;
  if (err != EWOULDBLOCK) {
    return absl::UnavailableError(absl::StrCat("cannot lock ", path, ": ", strerror(err)));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "database ", path, " is in use by another coordinator (PID ", holder,
      ", whose lock file was removed or replaced); stop it first, or give this one another "
      "--data-dir"));
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
  // The lock file may be deleted while its holder runs; the database file is the store itself.
  int db_fd = -1;
  if (absl::Status s = LockDatabase(data_dir + "/" + kDatabaseFileName, &db_fd); !s.ok()) {
    close(fd);
    return s;
  }
  if (absl::Status s = WritePid(fd); !s.ok()) {
    close(fd);
    close(db_fd);
    return absl::UnavailableError(absl::StrCat(path, ": ", s.message()));
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd, db_fd));
}

DataDirLock::~DataDirLock() {
  close(db_fd_);
  close(fd_);
}

}  // namespace ablate
