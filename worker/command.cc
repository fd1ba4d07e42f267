// fork/exec with a pipe for stdout and a poll-based deadline.
#include "worker/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ablate::worker {
namespace {

using SteadyClock = std::chrono::steady_clock;

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

int DecodeWait(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Reads until EOF or the deadline; returns false on timeout.
bool Drain(int fd, SteadyClock::time_point deadline, std::string& out) {
  char buf[4096];
  while (true) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, int(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return rc == 0 ? false : true;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buf, size_t(n));
  }
}

}  // namespace

std::string Trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

std::string SelfDirectory() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, size_t(n));
  return path.substr(0, path.rfind('/'));
}

absl::StatusOr<std::string> FindExecutable(const std::string& name,
                                           const std::vector<std::string>& extra_dirs) {
  if (name.find('/') != std::string::npos) {
    if (IsExecutable(name)) return name;
    return absl::NotFoundError("not an executable file: " + name);
  }
  std::string self = SelfDirectory();
  if (!self.empty() && IsExecutable(self + "/" + name)) return self + "/" + name;
  for (const std::string& dir : extra_dirs) {
    std::string full = (dir.starts_with("/") ? dir : self + "/" + dir) + "/" + name;
    if (IsExecutable(full)) return full;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && IsExecutable(dir + "/" + name)) return dir + "/" + name;
  }
  return absl::NotFoundError(name + " not found next to this binary (" + self + ") or in $PATH");
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout) {
  absl::StatusOr<std::string> exe = FindExecutable(argv.at(0));
  if (!exe.ok()) return exe.status();
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(fds[1], 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 2);
    ::execv(exe->c_str(), args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  CommandResult result;
  bool finished = Drain(fds[0], SteadyClock::now() + timeout, result.out);
  ::close(fds[0]);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = DecodeWait(status);
  return result;
}

}  // namespace ablate::worker
