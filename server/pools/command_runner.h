// Runs a short command to completion and returns its exit code, stdout and stderr: how the
// coordinator calls Slurm's commands (sbatch, squeue, scancel, sacct). An interface so that the
// pool manager can be given a recording or counting runner.
#ifndef ABLATE_SERVER_POOLS_COMMAND_RUNNER_H_
#define ABLATE_SERVER_POOLS_COMMAND_RUNNER_H_

#include <chrono>
#include <string>
#include <vector>

namespace ablate {

struct CommandOutput {
  int exit_code = -1;  // 127: could not be executed; 128 + signal when killed (timeout: SIGKILL)
  std::string out;
  std::string err;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Thread-safe. argv[0] is searched in $PATH.
  virtual CommandOutput Run(const std::vector<std::string>& argv) = 0;
};

// fork/exec with pipes; killed after `timeout`. Output is read until the command exits, not
// until every process that inherited its pipes has closed them: ssh's ControlPersist master
// (ssh_transport.h) outlives the ssh that started it and keeps stderr open.
class ProcessRunner : public CommandRunner {
 public:
  explicit ProcessRunner(std::chrono::milliseconds timeout = std::chrono::seconds(60))
      : timeout_(timeout) {}
  CommandOutput Run(const std::vector<std::string>& argv) override { return Run(argv, ""); }
  // With `input` on the command's standard input (then closed): how a secret reaches a remote
  // file without appearing on any command line.
  CommandOutput Run(const std::vector<std::string>& argv, const std::string& input);

 private:
  const std::chrono::milliseconds timeout_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_COMMAND_RUNNER_H_
