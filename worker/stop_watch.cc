// The worker's stop conditions: signals and idleness, polled together.
#include "worker/stop_watch.h"

#include <time.h>

namespace ablate::worker {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string AwaitStop(const sigset_t& signals, WorkerCore& core, StopWatchOptions options) {
  if (!options.now_ms) options.now_ms = SteadyMs;
  int64_t busy_at = options.now_ms();
  while (true) {
    timespec wait{options.poll.count() / 1000, (options.poll.count() % 1000) * 1000000};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) {
      std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
      core.ReleaseAll("worker received " + name);
      return "received " + name;
    }
    if (sig == SIGUSR1) core.Drain();
    const int64_t now = options.now_ms();
    if (!core.Idle()) {
      busy_at = now;
      continue;
    }
    if (core.draining()) return "drained and idle";
    if (options.idle_exit.count() > 0 && now - busy_at >= options.idle_exit.count()) {
      return "idle for " + std::to_string(options.idle_exit.count() / 1000) + " s (idle exit)";
    }
  }
}

}  // namespace ablate::worker
