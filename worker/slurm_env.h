// `ablate-worker --slurm`: what the worker learns from the Slurm job it runs in (reference/
// slurm.md §2). Its id names the allocation ("slurm/<cluster>/<job>.<restart>/<node>"), so that a
// requeued job's new incarnation is a new worker; its GPUs are the ones Slurm gave the task
// (CUDA_VISIBLE_DEVICES), models from nvidia-smi where it knows them.
#ifndef ABLATE_WORKER_SLURM_ENV_H_
#define ABLATE_WORKER_SLURM_ENV_H_

#include <functional>
#include <string>
#include <vector>

#include "ablate/v1/types.pb.h"
#include "ablate/v1/worker.pb.h"
#include "absl/status/statusor.h"

namespace ablate::worker {

struct SlurmIdentity {
  v1::SlurmAllocation allocation;
  std::string worker_id;
  std::vector<int> gpu_indices;  // from CUDA_VISIBLE_DEVICES; empty when unset or empty
};

// Reads SLURM_JOB_ID, SLURM_CLUSTER_NAME, SLURM_RESTART_COUNT, SLURM_NODEID,
// SLURM_JOB_NUM_NODES, SLURM_STEP_ID ("" when unset: not started by srun) and
// CUDA_VISIBLE_DEVICES through `getenv` (returns null when unset).
// FAILED_PRECONDITION when SLURM_JOB_ID is missing (not inside a Slurm job), INVALID_ARGUMENT
// naming the variable when one is malformed.
absl::StatusOr<SlurmIdentity> ReadSlurmIdentity(
    const std::function<const char*(const char*)>& getenv, const std::string& pool);

// "slurm/lab/12.0/1".
std::string SlurmWorkerId(const v1::SlurmAllocation& a);

// The GPUs to offer: one per index Slurm gave, with the model and memory nvidia-smi reports for
// that index when it does (`probed`), "unknown" otherwise.
std::vector<v1::Gpu> SlurmGpus(const std::vector<int>& indices, const std::vector<v1::Gpu>& probed);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_SLURM_ENV_H_
