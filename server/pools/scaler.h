// The scaler's decision for one pool, as a pure function: how many pilot allocations to submit
// and which pending ones to cancel, from the runs that want to run now and the allocations held.
// Core logic: no Slurm calls, no store.
//
// Pilots are whole nodes. A run on at most one node (gpus_per_run <= gpus_per_node) shares a
// one-node pilot with other such runs: the one-node pilots wanted are the nodes a first-fit
// packing of their GPUs needs (CPU runs: cpu_slots per node). A larger run (a gang) wants one
// pilot of gpus_per_run / gpus_per_node nodes to itself. For every node count the scaler
// submits what is wanted beyond the allocations held (running or pending), never more than
// max_nodes in all, and cancels pending allocations beyond what is wanted (newest first);
// running ones leave by themselves when idle (the worker's idle_exit).
#ifndef ABLATE_SERVER_POOLS_SCALER_H_
#define ABLATE_SERVER_POOLS_SCALER_H_

#include <cstdint>
#include <map>
#include <vector>

#include "server/pools/slurm_output.h"

namespace ablate {

struct ScalerPool {
  int gpus_per_node = 0;
  int cpu_slots = 1;  // per node
  int max_nodes = 1;
};

struct HeldAllocation {
  int64_t job_id = 0;
  int nodes = 1;
  bool pending = false;  // false: running
};

struct ScalerDecision {
  std::map<int, int> submit;         // node count -> allocations to submit
  std::vector<int64_t> cancel;       // pending allocations no longer wanted
  std::map<int, int> wanted;         // node count -> allocations the runs want (for display)
  std::vector<int> unplaceable;      // gpus_per_run values no pilot of this pool can hold
};

// What one pool's pilots, as squeue lists them, hold: each pending or running job with the node
// count its comment (PilotTag) names, or squeue's when the comment is not a pilot's; jobs in any
// other state (COMPLETING, ...) hold nothing the scaler can count on.
std::vector<HeldAllocation> HeldAllocations(const std::vector<SlurmJob>& pilots);

// `runs`: the gpus_per_run of every run of the pool that wants to run now (queued, or assigned
// or running already), at most max_concurrent per sweep. A gang size that is not a whole number
// of nodes is reported in `unplaceable` and not asked for.
ScalerDecision ScalePool(const ScalerPool& pool, const std::vector<int>& runs,
                     const std::vector<HeldAllocation>& held);

// Nodes one run of `gpus_per_run` needs in this pool: 1 up to gpus_per_node, then
// gpus_per_run / gpus_per_node; 0 when it cannot be placed (not a whole number of nodes).
int NodesPerRun(const ScalerPool& pool, int gpus_per_run);

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_SCALER_H_
