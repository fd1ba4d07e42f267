// Real child processes for integration tests: start a binary with arguments and environment,
// capture its stdout and stderr into files, signal it, wait for it with a timeout.
#ifndef ABLATE_TESTS_UTIL_SUBPROCESS_H_
#define ABLATE_TESTS_UTIL_SUBPROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ablate::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

class Subprocess {
 public:
  // Starts `argv[0]` with the given extra environment variables (added to the parent's), in
  // `cwd` when given (else in the test's own directory; exit code 126 when it cannot go there).
  // stdout and stderr go to files under `log_dir`. Aborts the test binary if fork fails.
  Subprocess(std::vector<std::string> argv, const std::string& log_dir,
             std::map<std::string, std::string> env = {}, const std::string& cwd = "");
  ~Subprocess();  // SIGKILLs the child if it is still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig) const;
  // Waits for exit; nullopt on timeout (the child keeps running).
  std::optional<ProcessResult> Wait(std::chrono::milliseconds timeout);
  // What the child has written so far.
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string out_path_, err_path_;
};

// Runs a command to completion (at most `timeout`, then SIGKILL) with optional stdin text.
ProcessResult RunProcess(std::vector<std::string> argv, std::map<std::string, std::string> env = {},
                  std::chrono::milliseconds timeout = std::chrono::seconds(60),
                  const std::string& stdin_text = "");

// A fresh temporary directory, removed with its contents when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path);
// A loopback TCP port nobody listens on now (the OS picks it; the socket is closed again), for a
// daemon the test starts on it just after; 0 when none could be had.
int FreeLoopbackPort();
void WriteFile(const std::string& path, const std::string& text);

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_UTIL_SUBPROCESS_H_
