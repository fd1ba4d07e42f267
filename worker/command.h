// Short helper commands run to completion (nvidia-smi, `ablate-train --version`), and locating
// executables.
#ifndef ABLATE_WORKER_COMMAND_H_
#define ABLATE_WORKER_COMMAND_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ablate::worker {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;     // stdout; stderr is discarded
};

// Runs argv[0] (searched in $PATH when it has no '/') and collects stdout. Killed with SIGKILL
// after `timeout`. NOT_FOUND when the program cannot be executed; INTERNAL on fork/pipe failure.
// Thread-safe.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout);

// Absolute path of `name`: `name` itself when it contains '/', else the first executable match in
// the directory of /proc/self/exe, then in `extra_dirs` (relative ones are taken from that
// directory), then in $PATH. NOT_FOUND otherwise.
absl::StatusOr<std::string> FindExecutable(const std::string& name,
                                           const std::vector<std::string>& extra_dirs = {});

// The directory of the running binary ("" when unknown).
std::string SelfDirectory();

// `s` without leading and trailing spaces, tabs, CRs and LFs (command output, CSV fields, files).
std::string Trim(std::string s);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_COMMAND_H_
