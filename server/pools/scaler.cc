// First-fit packing of one-node runs, one pilot per gang, capped by max_nodes.
#include "server/pools/scaler.h"

#include <algorithm>
#include <functional>

namespace ablate {
namespace {

// Nodes a first-fit-decreasing packing of these GPU counts needs, gpus_per_node each.
int PackGpuRuns(std::vector<int> gpus, int gpus_per_node) {
  std::sort(gpus.begin(), gpus.end(), std::greater<>());
  std::vector<int> free;  // per node
  for (int g : gpus) {
    auto it = std::find_if(free.begin(), free.end(), [g](int f) { return f >= g; });
    if (it == free.end()) it = free.insert(free.end(), gpus_per_node);
    *it -= g;
  }
  return static_cast<int>(free.size());
}

}  // namespace

int NodesPerRun(const ScalerPool& pool, int gpus_per_run) {
  if (gpus_per_run == 0) return pool.cpu_slots > 0 ? 1 : 0;
  if (pool.gpus_per_node <= 0) return 0;
  if (gpus_per_run <= pool.gpus_per_node) return 1;
  if (gpus_per_run % pool.gpus_per_node != 0) return 0;
  return gpus_per_run / pool.gpus_per_node;
}

std::vector<HeldAllocation> HeldAllocations(const std::vector<SlurmJob>& pilots) {
  std::vector<HeldAllocation> held;
  for (const SlurmJob& j : pilots) {
    if (!j.pending() && !j.running()) continue;
    std::optional<PilotTag> tag = ParsePilotTag(j.comment);
    held.push_back({j.id, tag ? tag->nodes : j.nodes, j.pending()});
  }
  return held;
}

ScalerDecision ScalePool(const ScalerPool& pool, const std::vector<int>& runs,
                     const std::vector<HeldAllocation>& held) {
  ScalerDecision d;
  std::vector<int> gpu_runs;
  int cpu_runs = 0;
  for (int g : runs) {
    int nodes = NodesPerRun(pool, g);
    if (nodes == 0) d.unplaceable.push_back(g);
    else if (nodes > 1) ++d.wanted[nodes];
    else if (g == 0) ++cpu_runs;
    else gpu_runs.push_back(g);
  }
  int single = PackGpuRuns(gpu_runs, pool.gpus_per_node);
  if (cpu_runs > 0) single = std::max(single, (cpu_runs + pool.cpu_slots - 1) / pool.cpu_slots);
  if (single > 0) d.wanted[1] = single;

  std::map<int, int> have;
  std::map<int, std::vector<int64_t>> pending;  // by node count, oldest (lowest id) first
  int nodes_held = 0;
  for (const HeldAllocation& a : held) {
    ++have[a.nodes];
    nodes_held += a.nodes;
    if (a.pending) pending[a.nodes].push_back(a.job_id);
  }
  for (auto& [nodes, ids] : pending) std::sort(ids.begin(), ids.end());
  // Pending allocations nobody wants any more go first, so their nodes count for the rest.
  for (auto& [nodes, count] : have) {
    int extra = count - (d.wanted.count(nodes) ? d.wanted.at(nodes) : 0);
    std::vector<int64_t>& ids = pending[nodes];
    for (; extra > 0 && !ids.empty(); --extra) {
      d.cancel.push_back(ids.back());
      ids.pop_back();
      nodes_held -= nodes;
    }
  }
  for (const auto& [nodes, want] : d.wanted) {
    int missing = want - (have.count(nodes) ? have.at(nodes) : 0);
    for (; missing > 0 && nodes_held + nodes <= pool.max_nodes; --missing) {
      ++d.submit[nodes];
      nodes_held += nodes;
    }
  }
  return d;
}

}  // namespace ablate
