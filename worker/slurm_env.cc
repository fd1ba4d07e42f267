// Slurm's job environment, read into the worker's identity.
#include "worker/slurm_env.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace ablate::worker {
namespace {

// The variable as a non-negative integer; `fallback` when unset.
absl::StatusOr<int64_t> IntVar(const std::function<const char*(const char*)>& getenv,
                               const char* name, std::optional<int64_t> fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') {
    if (fallback) return *fallback;
    return absl::FailedPreconditionError(std::string(name) +
                                         " is not set: --slurm runs only inside a Slurm job "
                                         "(started by srun in an sbatch script)");
  }
  std::string_view s(v);
  int64_t out = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size() || out < 0) {
    return absl::InvalidArgumentError(std::string(name) + "='" + v + "' is not a number");
  }
  return out;
}

absl::StatusOr<std::vector<int>> VisibleDevices(const char* cvd) {
  std::vector<int> out;
  if (cvd == nullptr) return out;
  std::string_view s(cvd);
  while (!s.empty()) {
    std::string_view item = s.substr(0, s.find(','));
    int v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v < 0) {
      return absl::InvalidArgumentError(
          "CUDA_VISIBLE_DEVICES='" + std::string(cvd) +
          "' is not a list of GPU indices (GPU UUIDs are not supported with --slurm)");
    }
    out.push_back(v);
    s.remove_prefix(std::min(s.size(), item.size() + 1));
  }
  return out;
}

}  // namespace

std::string SlurmWorkerId(const v1::SlurmAllocation& a) {
  return "slurm/" + a.cluster() + "/" + std::to_string(a.job_id()) + "." +
         std::to_string(a.restart_count()) + "/" + std::to_string(a.node_index());
}

absl::StatusOr<SlurmIdentity> ReadSlurmIdentity(
    const std::function<const char*(const char*)>& getenv, const std::string& pool) {
  absl::StatusOr<int64_t> job = IntVar(getenv, "SLURM_JOB_ID", std::nullopt);
  if (!job.ok()) return job.status();
  absl::StatusOr<int64_t> restart = IntVar(getenv, "SLURM_RESTART_COUNT", 0);
  absl::StatusOr<int64_t> node = IntVar(getenv, "SLURM_NODEID", 0);
  absl::StatusOr<int64_t> nodes = IntVar(getenv, "SLURM_JOB_NUM_NODES", 1);
  absl::StatusOr<std::vector<int>> gpus = VisibleDevices(getenv("CUDA_VISIBLE_DEVICES"));
  for (const absl::Status& s : {restart.status(), node.status(), nodes.status(), gpus.status()}) {
    if (!s.ok()) return s;
  }
  SlurmIdentity id;
  const char* cluster = getenv("SLURM_CLUSTER_NAME");
  id.allocation.set_cluster(cluster && *cluster ? cluster : "slurm");
  id.allocation.set_job_id(*job);
  id.allocation.set_restart_count(static_cast<int>(*restart));
  id.allocation.set_node_index(static_cast<int>(*node));
  id.allocation.set_num_nodes(static_cast<int>(*nodes));
  id.allocation.set_pool(pool);
  // The pilot runs the worker as an srun step; its trainers run inside that step.
  const char* step = getenv("SLURM_STEP_ID");
  id.allocation.set_step_id(step ? step : "");
  id.worker_id = SlurmWorkerId(id.allocation);
  id.gpu_indices = *std::move(gpus);
  return id;
}

std::vector<v1::Gpu> SlurmGpus(const std::vector<int>& indices,
                               const std::vector<v1::Gpu>& probed) {
  std::vector<v1::Gpu> out;
  for (int i : indices) {
    v1::Gpu g;
    g.set_index(i);
    g.set_model("unknown");
    for (const v1::Gpu& p : probed) {
      if (p.index() == i) g = p;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace ablate::worker
