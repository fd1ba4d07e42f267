// WorkerCore's record of one attempt, shared by worker_core.cc and worker_core_scripts.cc.
// Internal to the worker core; not part of its interface.
#ifndef ABLATE_WORKER_WORKER_CORE_ATTEMPT_H_
#define ABLATE_WORKER_WORKER_CORE_ATTEMPT_H_

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "worker/worker_core.h"

namespace ablate::worker {

// Every node of a multi-node attempt trains the same all-reduced model and emits the same points,
// but the coordinator keeps one curve per attempt, deduplicated by (attempt, seq): only node 0's
// worker sends them. The others keep theirs in the run folder (events.jsonl).
inline bool ReportsMetrics(const v1::Assignment& a) {
  return a.num_nodes() <= 1 || a.node_rank() == 0;
}

struct WorkerCore::Attempt {
  // `core_mu` is the owning WorkerCore's mu_.
  Attempt(const v1::Assignment& as, BatcherOptions batching, absl::Mutex& core_mu)
      : assignment(as), reports_metrics(ReportsMetrics(as)), core_mu(core_mu), batcher(batching) {}
  ~Attempt() {
    if (starter.joinable()) starter.join();
  }
  const v1::Assignment assignment;
  const bool reports_metrics;  // false: the points stay in the run folder, no MetricBatch
  // The owning WorkerCore's mu_, under which the fields below that name it are read and written.
  // An annotation cannot name another object's member, so WorkerCore's functions say
  // `a.core_mu.AssertHeld()` once they hold mu_, and the analysis then checks every access.
  absl::Mutex& core_mu;
  std::unique_ptr<RunSupervisor> supervisor;
  absl::Mutex batch_mu;
  Batcher batcher ABSL_GUARDED_BY(batch_mu);
  bool finished ABSL_GUARDED_BY(batch_mu) = false;
  bool given_back ABSL_GUARDED_BY(batch_mu) = false;  // full disk: nothing more goes to the outbox
  // The trainer resumed from a checkpoint with this many steps done (its start event); every
  // MetricBatch of the attempt carries it.
  std::optional<int64_t> resumed_from_step ABSL_GUARDED_BY(batch_mu);
  bool stale ABSL_GUARDED_BY(core_mu) = false;
  bool id_sent ABSL_GUARDED_BY(core_mu) = false;  // node 0 of a multi-node attempt: NcclId sent
  // Script runs (worker_core_scripts.cc).
  bool script = false;  // set before the attempt is shared, then only read
  bool starting ABSL_GUARDED_BY(core_mu) = false;  // the starter has not handed over yet
  bool start_cancelled ABSL_GUARDED_BY(core_mu) = false;
  std::chrono::milliseconds cancel_grace ABSL_GUARDED_BY(core_mu){0};
  // Torch master address and port.
  std::optional<std::pair<std::string, int>> rendezvous ABSL_GUARDED_BY(core_mu);
  std::thread starter;  // joined by Shutdown or the destructor
};

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_WORKER_CORE_ATTEMPT_H_
