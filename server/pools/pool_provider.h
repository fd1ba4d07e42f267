// What differs between pool kinds (issue 38): how a pool's nodes are looked at, and how a node's
// worker is started, watched and stopped. Slurm pools (slurm_provider.h) ask Slurm for pilot
// allocations and read squeue; ssh pools (ssh_provider.h) start workers on rented nodes over
// OpenSSH and look at them there. The PoolManager (pool_manager.h) runs one loop per provider
// with the provider's own cadence, works out what each pool's runs want from the store, and
// hands it over; the provider fences the dispatcher's workers of nodes that are gone (their
// attempts requeued, not charged) and starts or stops nodes for what is wanted.
#ifndef ABLATE_SERVER_POOLS_POOL_PROVIDER_H_
#define ABLATE_SERVER_POOLS_POOL_PROVIDER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/pools/pool_config.h"
#include "server/pools/slurm_output.h"

namespace ablate {

// What one pool's runs want now.
struct PoolWant {
  std::vector<int> runs;   // gpus_per_run of each run that wants to run now (queued or held)
  int64_t sweep_hint = 0;  // the oldest sweep with queued runs (names Slurm pilots)
};

// One pilot as the last poll saw it (Slurm pools).
struct PilotStatus {
  SlurmJob job;
  PilotTag tag;
  int runs = 0;  // runs its workers hold now
};

// One host of an ssh pool as its provider knows it.
struct SshHostStatus {
  std::string host;   // as in the pools file
  std::string key;    // the worker is ssh/POOL/KEY
  std::string state;  // down, starting, up, stopping, unreachable, backoff, bad
  int64_t incarnation = 0;  // the start it runs (or last ran); 0 never started
  int runs = 0;             // runs its worker holds now
  bool connected = false;   // its worker is connected to this coordinator
  std::string error;        // the last failure on it, "" when none
  int64_t since_ms = 0;     // when it entered `state`
  int64_t retry_ms = 0;     // backoff: when it is tried again
  int64_t last_start_ms = 0;  // how long its last bring-up took (push, preflight, start)
  bool last_start_copied = false;  // ... and whether that copied the bundle
  // How that start detached the worker: "systemd user unit NAME" or "own session".
  std::string started_as;
};

struct PoolStatus {
  PoolConfig config;
  std::vector<PilotStatus> pilots;    // Slurm
  std::vector<SshHostStatus> hosts;   // ssh
  std::map<int, int> wanted;  // node count -> allocations (Slurm) or nodes (ssh) the runs want
  int64_t polled_ms = 0;      // when the nodes were last looked at; 0 before the first poll
  std::string error;          // the last pool-wide failure, "" when none
};

class PoolProvider {
 public:
  virtual ~PoolProvider() = default;

  // Its loop polls every poll_ms; a Kick polls sooner, but never sooner than min_poll_ms after
  // the last poll.
  virtual int64_t poll_ms() const = 0;
  virtual int64_t min_poll_ms() const = 0;
  // The pools it serves.
  virtual std::vector<std::string> pools() const = 0;
  // One pass at `seen_ms`: look at the nodes, fence the workers of those gone, then start or
  // stop nodes for `want` (by pool; a pool absent wants nothing).
  virtual void Poll(const std::map<std::string, PoolWant>& want, int64_t seen_ms) = 0;
  // At submit, after the pool-independent checks: whether a run of `gpus_per_run` GPUs on
  // `nodes` nodes can ever run here (INVALID_ARGUMENT naming why not).
  virtual absl::Status CheckShape(const PoolConfig& config, int nodes, int gpus_per_run) = 0;
  virtual std::vector<PoolStatus> Snapshot() const = 0;
  // Why the pool's queued runs wait ("" when the provider has nothing to add).
  virtual std::string Waiting(const std::string& pool) const = 0;
  // `ablate pools drain|release|resume POOL [HOST]`: what was done, in words.
  virtual absl::StatusOr<std::string> Act(const std::string& pool, const std::string& host,
                                          const std::string& action) {
    (void)host;
    (void)action;
    return absl::FailedPreconditionError(
        "pool '" + pool + "' is a Slurm pool: its pilots are Slurm's jobs (scancel --signal=USR1 "
        "drains one, scancel releases it)");
  }
  // External commands run so far (squeue, ssh, ...), for the benches.
  virtual int64_t commands() const = 0;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_POOL_PROVIDER_H_
