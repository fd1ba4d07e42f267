// fork/exec/poll: both output pipes are drained together, so a chatty stderr cannot block.
#include "server/pools/command_runner.h"

#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ablate {
namespace {

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// A write to a child that closed its stdin must not end the coordinator with SIGPIPE: blocked
// for this thread around the write, and a pending one taken back.
ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t r = write(fd, data, n);
  int saved = errno;
  if (r < 0 && errno == EPIPE) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return r;
}

}  // namespace

CommandOutput ProcessRunner::Run(const std::vector<std::string>& argv,
                                 const std::string& input) {
  CommandOutput result;
  int out[2], err[2], in[2];
  if (argv.empty() || pipe2(out, O_CLOEXEC) != 0) return result;
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]);
    return result;
  }
  if (pipe2(in, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    return result;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0), dup2(out[1], 1), dup2(err[1], 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]), close(err[1]), close(in[0]);
  if (pid < 0) {
    close(out[0]), close(err[0]), close(in[1]);
    return result;
  }
  for (int fd : {out[0], err[0], in[1]}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  size_t written = 0;
  int stdin_fd = in[1];
  if (input.empty()) close(stdin_fd), stdin_fd = -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {stdin_fd, POLLOUT, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  bool killed = false, exited = false;
  int status = 0;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !killed) kill(pid, SIGKILL), killed = true;
    // Exited: what it wrote is in the pipes; drain them once more below and stop.
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = true;
    int wait_ms = exited ? 0 : killed ? 100 : static_cast<int>(std::min<int64_t>(left.count(), 100));
    if (poll(fds, 3, wait_ms) < 0 && errno != EINTR) break;
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = WriteWithoutSigpipe(fds[2].fd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        close(fds[2].fd);
        fds[2].fd = -1;
      }
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0) continue;
      if (!exited && !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n;
      while ((n = read(fds[i].fd, buf, sizeof buf)) > 0) sinks[i]->append(buf, static_cast<size_t>(n));
      if (n == 0 || exited || (errno != EAGAIN && errno != EINTR)) {
        close(fds[i].fd);
        fds[i].fd = -1;
      }
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  if (!exited) waitpid(pid, &status, 0);
  result.exit_code = DecodeStatus(status);
  return result;
}

}  // namespace ablate
