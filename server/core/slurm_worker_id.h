// Worker ids of Slurm pilots: "slurm/<cluster>/<job>.<restart>/<node>" (ablate-worker --slurm,
// worker/slurm_env.h). The id alone says which allocation a worker belongs to, so the store can
// record an attempt's Slurm job and the CLI can show a worker's allocation without asking Slurm.
#ifndef ABLATE_SERVER_CORE_SLURM_WORKER_ID_H_
#define ABLATE_SERVER_CORE_SLURM_WORKER_ID_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ablate {

struct SlurmWorkerRef {
  std::string cluster;
  int64_t job_id = 0;
  int restart_count = 0;
  int node_index = 0;
  // "lab/12.0": the allocation (one incarnation of the job).
  std::string allocation() const;
};

// nullopt for any other worker id.
std::optional<SlurmWorkerRef> ParseSlurmWorkerId(std::string_view worker_id);

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_SLURM_WORKER_ID_H_
