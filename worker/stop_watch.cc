// The worker's stop conditions: signals and idleness, polled together.
#include "worker/stop_watch.h"

#include <time.h>

namespace ablate::worker {
std::string AwaitStop(const sigset_t& signals, WorkerCore& core, StopWatchOptions options) {
  int64_t busy_at = options.clock->MonotonicMs();
  while (true) {
    timespec wait{options.poll.count() / 1000, (options.poll.count() % 1000) * 1000000};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) {
      std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
      core.ReleaseAll("worker received " + name);
      return "received " + name;
    }
    if (sig == SIGUSR1) core.Drain();
    const int64_t now = options.clock->MonotonicMs();
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
