// Which GPUs the worker offers: found with nvidia-smi, narrowed by --gpus.
#ifndef ABLATE_WORKER_GPU_PROBE_H_
#define ABLATE_WORKER_GPU_PROBE_H_

#include <string>
#include <vector>

#include "ablate/v1/types.pb.h"
#include "absl/status/statusor.h"

namespace ablate::worker {

// Parses `nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits`
// output ("0, NVIDIA H100 80GB HBM3, 81559" per line). Malformed lines are skipped.
std::vector<v1::Gpu> ParseNvidiaSmi(const std::string& csv);

// Runs nvidia-smi; an empty list when it is absent or fails (a CPU-only node).
std::vector<v1::Gpu> ProbeGpus();

// Applies a --gpus spec: "all" keeps `found`, "none" keeps nothing, "0,2" keeps those indices.
// INVALID_ARGUMENT for a malformed spec or an index that was not found.
absl::StatusOr<std::vector<v1::Gpu>> SelectGpus(const std::vector<v1::Gpu>& found,
                                                const std::string& spec);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_GPU_PROBE_H_
