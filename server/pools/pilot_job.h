// The sbatch command line of a pilot job (core logic; tested without Slurm): one allocation of
// `nodes` whole nodes of a pool, one task per node, whose payload is `srun ablate-worker --slurm`.
// --no-requeue (ablate requeues the runs itself), USR1 to the payload signal_before seconds
// before the time limit (the worker drains), and a job name and comment (pilot tag) that say
// which coordinator, pool and sweep it is for.
#ifndef ABLATE_SERVER_POOLS_PILOT_JOB_H_
#define ABLATE_SERVER_POOLS_PILOT_JOB_H_

#include <string>
#include <string_view>
#include <vector>

#include "server/pools/pool_config.h"
#include "server/pools/slurm_output.h"

namespace ablate {

// "ablate-<coordinator id>": every pilot of one coordinator carries it; squeue filters by it.
std::string PilotJobName(std::string_view coordinator_id);

// The worker's command line inside the allocation, shell-quoted, after `exec srun`; with a
// `container:` the runtime's words come first (pool_container.h).
std::string PilotPayload(const PoolConfig& pool, const std::string& coordinator_address);

// sbatch's arguments (argv[0] = "sbatch") for a pilot of tag.nodes nodes.
std::vector<std::string> PilotSbatchArgs(const PoolConfig& pool, const PilotTag& tag,
                                         const std::string& coordinator_address);

// `sbatch --test-only` for the same shape: does Slurm think it can ever be scheduled?
std::vector<std::string> PilotTestArgs(const PoolConfig& pool, int nodes);

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_PILOT_JOB_H_
