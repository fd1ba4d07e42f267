// When the worker daemon stops, and how (issue 15): SIGTERM or SIGINT give every running attempt
// back to the coordinator at once (WorkerCore::ReleaseAll) before the trainers are stopped;
// SIGUSR1 drains (no new runs); an idle worker exits after idle_exit, a draining one as soon as
// it is idle. Inside Slurm that is how a pilot leaves: scancel and preemption send SIGTERM,
// --signal sends USR1 before the time limit, and idle_exit hands the nodes back.
#ifndef ABLATE_WORKER_STOP_WATCH_H_
#define ABLATE_WORKER_STOP_WATCH_H_

#include <signal.h>

#include <chrono>
#include <string>

#include "common/clock.h"
#include "worker/worker_core.h"

namespace ablate::worker {

struct StopWatchOptions {
  std::chrono::milliseconds idle_exit{0};  // 0: never exit for idleness
  std::chrono::milliseconds poll{200};
  const Clock* clock = &SystemClock::Get();  // its MonotonicMs; not owned
};

// Blocks the calling thread until the worker should stop and returns why, in words. `signals`
// must hold SIGTERM, SIGINT and SIGUSR1 and be blocked in every thread (they are taken here with
// sigtimedwait). On SIGTERM/SIGINT the attempts are released before it returns; the caller then
// shuts the core down and closes the connection.
std::string AwaitStop(const sigset_t& signals, WorkerCore& core, StopWatchOptions options);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_STOP_WATCH_H_
