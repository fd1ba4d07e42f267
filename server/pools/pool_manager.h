// The coordinator's pools (issues 15 and 38, DESIGN §4): one loop per provider (pool_provider.h;
// all Slurm pools share one, each ssh pool has its own), each at its provider's cadence. Every
// pass reads what each pool's runs want now from the store (queued, assigned or running runs of
// sweeps with `pool:`, at most max_concurrent per sweep) and hands it to the provider, which
// looks at its nodes, fences the workers of those gone and starts or stops nodes. Thread-safe.
#ifndef ABLATE_SERVER_POOLS_POOL_MANAGER_H_
#define ABLATE_SERVER_POOLS_POOL_MANAGER_H_

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/dispatch/dispatcher.h"
#include "server/pools/command_runner.h"
#include "server/pools/pool_config.h"
#include "server/pools/pool_provider.h"
#include "server/store/store.h"

namespace ablate {

struct PoolManagerOptions {
  std::string coordinator_id;       // [A-Za-z0-9._-]; names the pilot jobs
  std::string coordinator_address;  // HOST:PORT the pools' workers dial
  int64_t poll_ms = 20000;          // Slurm: one squeue per interval (a Kick may come sooner)
  // A Kick polls Slurm at once, but never sooner than this after the last poll (at most
  // poll_ms), so that even a stream of submissions costs at most 60000 / min_poll_ms squeue
  // calls a minute.
  int64_t min_poll_ms = 15000;
  // ssh pools: each host is looked at (one ssh call on its master connection) this often, and a
  // Kick brings nodes up at once.
  int64_t ssh_poll_ms = 5000;
  // Where ssh keeps its master sockets ("" = a fresh folder under /tmp; socket paths must stay
  // under 108 bytes).
  std::string ssh_control_dir;
  // Its WallMs (ms since the epoch) stamps each poll; the dispatcher's clock. Not owned; must
  // outlive the manager.
  const Clock* clock = &SystemClock::Get();
};

class PoolManager {
 public:
  // Every pointer must outlive the manager. `slurm` runs Slurm's commands.
  PoolManager(std::vector<PoolConfig> pools, CommandRunner* slurm, Store* store,
              Dispatcher* dispatcher, PoolManagerOptions options);
  ~PoolManager();  // Stop()

  void Start();
  // Stops the loops. Workers the pools started keep running (a restarted coordinator adopts
  // them).
  void Stop();
  // A sweep was submitted: poll soon (Slurm: not sooner than min_poll_ms after the last poll).
  void Kick();
  // One pass of every provider. The loops call it per provider; tests may call this.
  void PollOnce();

  // At submit: OK for a sweep without a pool; INVALID_ARGUMENT naming the problem for an
  // unknown pool, a run size no node of the pool can hold, more nodes than max_nodes, a run
  // that spans nodes in an ssh pool, or a shape Slurm refuses (`sbatch --test-only`: a partition
  // too small, an unknown account), and for a sweep that `runs_scripts`, a pool whose workers do
  // not (no --allow-scripts in the pool's worker.args).
  absl::Status CheckSweep(const Sweep& sweep, bool runs_scripts = false);

  // Drain, release or resume an ssh pool's host ("" = every host); the pool's loop acts at once.
  absl::StatusOr<std::string> Act(const std::string& pool, const std::string& host,
                                  const std::string& action);

  std::vector<PoolStatus> Snapshot() const;
  // Adds, for queued runs of pool sweeps, why they wait on their pool (pending pilots and their
  // reasons, hosts coming up or bad), replacing the dispatcher's generic reason.
  void AddWaitingReasons(std::map<int64_t, std::string>* by_run) const;
  // Slurm commands run so far (for the bench).
  int64_t slurm_calls() const;

 private:
  struct ProviderLoop {
    std::unique_ptr<PoolProvider> provider;
    bool slurm = false;
    bool kicked = false;  // guarded by the manager's mu_
    std::thread thread;
  };
  void Loop(ProviderLoop* loop);
  void PollProvider(PoolProvider& provider);
  // What each pool's runs want now, and the queued run ids by pool.
  absl::Status Demand(std::map<std::string, PoolWant>* want,
                      std::map<int64_t, std::string>* queued_pool);

  const PoolManagerOptions options_;
  Store* const store_;
  Dispatcher* const dispatcher_;
  std::map<std::string, PoolConfig> configs_;
  std::vector<std::unique_ptr<ProviderLoop>> loops_;
  std::map<std::string, PoolProvider*> by_pool_;

  // The loops wait on mu_ itself (Mutex::AwaitWithDeadline) for stop_ or their kick.
  mutable absl::Mutex mu_;
  std::map<int64_t, std::string> queued_pool_ ABSL_GUARDED_BY(mu_);  // run -> pool
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::string control_dir_;  // made for ssh when options_.ssh_control_dir is ""
};

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_POOL_MANAGER_H_
