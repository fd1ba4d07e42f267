// Pieces shared by worker/preflight.cc and worker/preflight_gpu.cc; not part of the contract.
#ifndef ABLATE_WORKER_PREFLIGHT_INTERNAL_H_
#define ABLATE_WORKER_PREFLIGHT_INTERNAL_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ablate/v1/types.pb.h"
#include "worker/preflight.h"

namespace ablate::worker {

struct GpuFacts {
  std::vector<v1::Gpu> gpus;  // the GPUs this worker offers (after --gpus)
  std::string driver;         // nvidia-smi's driver_version; empty when unknown
};

// Appends the "gpus" line and returns what the later GPU lines need.
GpuFacts ProbeGpuFacts(const PreflightOptions& o, std::vector<CheckLine>& out);
// `report` is ablate-train's --libraries object (empty when it gave none).
CheckLine DriverLine(const GpuFacts& g, const nlohmann::json& report);
CheckLine CublasLtLine(const GpuFacts& g, const nlohmann::json& report);
CheckLine NcclLine(const GpuFacts& g, const nlohmann::json& report);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_PREFLIGHT_INTERNAL_H_
