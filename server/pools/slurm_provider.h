// Slurm pools' provider (issue 15, DESIGN §4): once per poll, ONE squeue call says what this
// coordinator's pilots are doing in all its Slurm pools; the workers of allocations that are no
// longer running are fenced (their attempts requeued at once, not charged); the scaler
// (scaler.h) submits pilots for the runs that wait (sbatch, one per allocation) and pending ones
// no longer wanted are cancelled (one scancel). Jobs that left the queue get their final state
// from one batched sacct call, where the cluster keeps accounting.
//
// A coordinator finds its pilots by job name (PilotJobName of its id), so a restarted
// coordinator with the same id adopts the allocations it had; its workers reconnect by
// themselves. Thread-safe.
#ifndef ABLATE_SERVER_POOLS_SLURM_PROVIDER_H_
#define ABLATE_SERVER_POOLS_SLURM_PROVIDER_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/dispatch/dispatcher.h"
#include "server/pools/command_runner.h"
#include "server/pools/pool_provider.h"
#include "server/pools/scaler.h"

namespace ablate {

struct SlurmProviderOptions {
  std::string coordinator_id;       // [A-Za-z0-9._-]; names the pilot jobs
  std::string coordinator_address;  // HOST:PORT the pilots' workers dial
  int64_t poll_ms = 20000;
  // So that even a stream of submissions costs at most 60000 / min_poll_ms squeue calls a minute.
  int64_t min_poll_ms = 15000;
};

class SlurmProvider : public PoolProvider {
 public:
  // `slurm` and `dispatcher` must outlive the provider.
  SlurmProvider(std::vector<PoolConfig> pools, CommandRunner* slurm, Dispatcher* dispatcher,
                SlurmProviderOptions options);

  int64_t poll_ms() const override { return options_.poll_ms; }
  int64_t min_poll_ms() const override { return options_.min_poll_ms; }
  std::vector<std::string> pools() const override;
  void Poll(const std::map<std::string, PoolWant>& want, int64_t seen_ms) override;
  // `sbatch --test-only` for the shape: a partition too small, an unknown account.
  absl::Status CheckShape(const PoolConfig& config, int nodes, int gpus_per_run) override;
  std::vector<PoolStatus> Snapshot() const override;
  // Its pending pilots and their reasons.
  std::string Waiting(const std::string& pool) const override;
  int64_t commands() const override;

 private:
  struct PoolState {
    PoolConfig config;
    std::vector<PilotStatus> pilots;
    std::map<int, int> wanted;
    std::string waiting;  // why its queued runs wait, "" when nothing pending
    std::vector<int> unplaceable;
  };
  // This coordinator's pilot jobs as squeue lists them, by pool.
  struct Pilots {
    std::map<std::string, std::vector<SlurmJob>> by_pool;
    std::map<int64_t, PilotTag> tags;  // by job id
    std::set<int64_t> gone;            // jobs the last poll saw that squeue no longer lists
  };
  CommandOutput Slurm(const std::vector<std::string>& argv);
  // squeue; nullopt when it failed (the error is logged and kept).
  std::optional<Pilots> ReadPilots();
  void Fence(const std::string& pool, const std::vector<SlurmJob>& jobs, int64_t seen_ms);
  void LogFinalStates(const std::set<int64_t>& gone);
  // scancel of pending pilots no run needs; a failure goes to `error`.
  void CancelPilots(const std::vector<int64_t>& cancel, std::string* error);
  // Submits what the scaler decided for one pool; returns the failure, "" if none.
  std::string Apply(const PoolConfig& config, const ScalerDecision& d, int64_t sweep_hint,
                    std::vector<int64_t>* cancel);

  const SlurmProviderOptions options_;
  CommandRunner* const slurm_;
  Dispatcher* const dispatcher_;
  const std::map<std::string, PoolConfig> configs_;

  mutable absl::Mutex mu_;
  std::map<std::string, PoolState> pools_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> known_jobs_ ABSL_GUARDED_BY(mu_);
  std::string error_ ABSL_GUARDED_BY(mu_);
  int64_t polled_ms_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  bool accounting_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_SLURM_PROVIDER_H_
