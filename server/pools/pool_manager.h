// The coordinator's pools (issue 15, DESIGN §4): a loop that, once per poll interval, asks Slurm
// with ONE squeue call what this coordinator's pilots are doing, fences the workers of
// allocations that are no longer running (their attempts requeued at once, not charged), and
// lets the scaler (scaler.h) submit pilots for the runs that wait (sbatch, one per allocation)
// and cancel pending ones no longer wanted (one scancel). Jobs that left the queue get their
// final state from one batched sacct call, where the cluster keeps accounting.
//
// A coordinator finds its pilots by job name (PilotJobName of its id), so a restarted
// coordinator with the same id adopts the allocations it had; its workers reconnect by
// themselves. Thread-safe.
#ifndef ABLATE_SERVER_POOLS_POOL_MANAGER_H_
#define ABLATE_SERVER_POOLS_POOL_MANAGER_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "server/dispatch/dispatcher.h"
#include "server/pools/command_runner.h"
#include "server/pools/pilot_job.h"
#include "server/pools/pool_config.h"
#include "server/pools/scaler.h"
#include "server/pools/slurm_output.h"
#include "server/store/store.h"

namespace ablate {

struct PoolManagerOptions {
  std::string coordinator_id;       // [A-Za-z0-9._-]; names the pilot jobs
  std::string coordinator_address;  // HOST:PORT the pilots' workers dial
  int64_t poll_ms = 20000;          // one squeue per interval (a Kick may come sooner)
  // A Kick polls at once, but never sooner than this after the last poll (at most poll_ms), so
  // that even a stream of submissions costs at most 60000 / min_poll_ms squeue calls a minute.
  int64_t min_poll_ms = 15000;
  std::function<int64_t()> clock;   // ms since epoch, the dispatcher's clock; system by default
};

// One pilot as the last poll saw it.
struct PilotStatus {
  SlurmJob job;
  PilotTag tag;
  int runs = 0;  // runs its workers hold now
};

struct PoolStatus {
  PoolConfig config;
  std::vector<PilotStatus> pilots;
  std::map<int, int> wanted;  // node count -> allocations the runs want
  int64_t polled_ms = 0;      // when squeue answered; 0 before the first poll
  std::string error;          // the last Slurm call's failure, "" when it worked
};

class PoolManager {
 public:
  // Every pointer must outlive the manager.
  PoolManager(std::vector<PoolConfig> pools, CommandRunner* slurm, Store* store,
              Dispatcher* dispatcher, PoolManagerOptions options);
  ~PoolManager();  // Stop()

  void Start();
  void Stop();
  // A sweep was submitted: poll soon (not sooner than min_poll_ms after the last poll).
  void Kick();
  // One poll: squeue, fencing, final states, scaling. The loop calls it; tests may too.
  void PollOnce();

  // At submit: OK for a sweep without a pool; INVALID_ARGUMENT naming the problem for an
  // unknown pool, a run size no pilot of the pool can hold, more nodes than max_nodes, or a
  // shape Slurm refuses (`sbatch --test-only`: a partition too small, an unknown account), and
  // for a sweep that `runs_scripts`, a pool whose pilots do not (no --allow-scripts in the
  // pool's worker.args).
  absl::Status CheckSweep(const Sweep& sweep, bool runs_scripts = false);

  std::vector<PoolStatus> Snapshot() const;
  // Adds, for queued runs of pool sweeps, why they wait on Slurm (pending pilots and their
  // reasons), replacing the dispatcher's generic reason.
  void AddWaitingReasons(std::map<int64_t, std::string>* by_run) const;
  // Slurm commands run so far (for the bench).
  int64_t slurm_calls() const;

 private:
  struct PoolState {
    PoolConfig config;
    std::vector<PilotStatus> pilots;
    std::map<int, int> wanted;
    std::string waiting;  // why its queued runs wait, "" when nothing pending
    std::vector<int> unplaceable;
  };
  // This coordinator's pilot jobs as squeue lists them, by pool, and the pools' configs.
  struct Pilots {
    std::map<std::string, PoolConfig> configs;
    std::map<std::string, std::vector<SlurmJob>> by_pool;
    std::map<int64_t, PilotTag> tags;  // by job id
    std::set<int64_t> gone;            // jobs the last poll saw that squeue no longer lists
  };
  void Loop();
  CommandOutput Slurm(const std::vector<std::string>& argv);
  // squeue; nullopt when it failed (the error is logged and kept).
  std::optional<Pilots> ReadPilots();
  // The scaler's decision per pool, applied (sbatch); pending pilots to cancel go to `cancel`,
  // and the last failure to `error`. Fills `queued_pool` (run -> pool) from the queue.
  std::map<std::string, PoolState> Scale(Pilots& pilots,
                                         std::map<int64_t, std::string>* queued_pool,
                                         std::vector<int64_t>* cancel, std::string* error);
  // scancel of pending pilots no run needs; a failure goes to `error`.
  void CancelPilots(const std::vector<int64_t>& cancel, std::string* error);
  // Runs of each pool that want to run now (gpus_per_run each), and their queued run ids.
  absl::Status Demand(std::map<std::string, std::vector<int>>* runs,
                      std::map<int64_t, std::string>* queued_pool);
  void Fence(const std::string& pool, const std::vector<SlurmJob>& jobs, int64_t seen_ms);
  void LogFinalStates(const std::set<int64_t>& gone);
  // Submits and cancels what the scaler decided for one pool; returns the failure, "" if none.
  std::string Apply(const PoolState& pool, const ScalerDecision& d, int64_t sweep_hint,
                    std::vector<int64_t>* cancel);

  const PoolManagerOptions options_;
  CommandRunner* const slurm_;
  Store* const store_;
  Dispatcher* const dispatcher_;

  mutable std::mutex mu_;
  std::map<std::string, PoolState> pools_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::string> queued_pool_ ABSL_GUARDED_BY(mu_);  // run -> pool
  std::set<int64_t> known_jobs_ ABSL_GUARDED_BY(mu_);
  std::string error_ ABSL_GUARDED_BY(mu_);
  int64_t polled_ms_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  bool accounting_ ABSL_GUARDED_BY(mu_) = true;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool kicked_ ABSL_GUARDED_BY(mu_) = false;
  std::condition_variable cv_;
  std::thread loop_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_POOL_MANAGER_H_
