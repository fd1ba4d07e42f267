// A full disk on the worker (issue 19): the one place where "no space left" becomes a Status, how
// the worker recognises it later, and the probe that tells when space has come back.
#ifndef ABLATE_WORKER_DISK_SPACE_H_
#define ABLATE_WORKER_DISK_SPACE_H_

#include <string>

#include "absl/status/status.h"

namespace ablate::worker {

// RESOURCE_EXHAUSTED "<what>: no space left on device", marked so that IsNoSpace knows it from a
// RESOURCE_EXHAUSTED of another origin (a gRPC message over its size limit, say).
absl::Status NoSpaceError(const std::string& what);
// For a failed file-system call: NoSpaceError when `err` is ENOSPC or EDQUOT, else INTERNAL
// "<what>: strerror(err)".
absl::Status FileError(const std::string& what, int err);
bool IsNoSpace(const absl::Status& status);

// Writes, fsyncs and removes a probe file of `bytes` bytes in `dir`. OK when it fits; a
// NoSpaceError when the disk is (still) full; INTERNAL for other failures.
absl::Status ProbeSpace(const std::string& dir, size_t bytes);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_DISK_SPACE_H_
