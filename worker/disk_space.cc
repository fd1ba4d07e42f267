// errno to Status for the worker's own files, and the free-space probe; see disk_space.h.
#include "worker/disk_space.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/cord.h"

namespace ablate::worker {
namespace {

constexpr const char* kNoSpaceUrl = "ablate.dev/worker/no-space";

}  // namespace

absl::Status NoSpaceError(const std::string& what) {
  absl::Status s = absl::ResourceExhaustedError(what + ": no space left on device");
  s.SetPayload(kNoSpaceUrl, absl::Cord("1"));
  return s;
}

absl::Status FileError(const std::string& what, int err) {
  if (err == ENOSPC || err == EDQUOT) return NoSpaceError(what);
  return absl::InternalError(what + ": " + std::strerror(err));
}

bool IsNoSpace(const absl::Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted &&
         status.GetPayload(kNoSpaceUrl).has_value();
}

absl::Status ProbeSpace(const std::string& dir, size_t bytes) {
  const std::string path = dir + "/.space-probe";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return FileError("create " + path, errno);
  // Written, not fallocated: what the outbox does, and what a tmpfs or a quota refuses alike.
  std::string block(4096, '\0');
  int err = 0;
  for (size_t done = 0; done < bytes && err == 0;) {
    ssize_t n = ::write(fd, block.data(), std::min(block.size(), bytes - done));
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += size_t(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  ::close(fd);
  ::unlink(path.c_str());
  return err == 0 ? absl::OkStatus() : FileError("write " + path, err);
}

}  // namespace ablate::worker
