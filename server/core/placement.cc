// Greedy priority/FIFO placement with backfill and gang scheduling.
#include "server/core/placement.h"

#include <algorithm>
#include <optional>
#include <set>

namespace ablate {
namespace {

bool HasDataset(const NodeCapacity& n, const std::string& dataset) {
  return dataset.empty() ||
         std::find(n.datasets.begin(), n.datasets.end(), dataset) != n.datasets.end();
}

// The node is in the run's pool and, when both are known, its allocation outlasts the run.
bool CanHold(const NodeCapacity& n, const QueuedRun& r, int64_t now_ms) {
  if (n.pool != r.pool) return false;
  return n.ends_ms == 0 || r.expected_ms == 0 || now_ms + r.expected_ms <= n.ends_ms;
}

// Whole idle nodes of `fits` making exactly `gpus`; nullopt (nothing taken) when they do not.
std::optional<std::vector<NodeShare>> TakeGangOf(std::vector<NodeCapacity*>& fits, int gpus) {
  std::vector<NodeCapacity*> chosen;
  int got = 0;
  for (NodeCapacity* n : fits) {
    if (n->total_gpus == 0 || static_cast<int>(n->free_gpus.size()) != n->total_gpus) continue;
    chosen.push_back(n);
    got += n->total_gpus;
    if (got >= gpus) break;
  }
  if (got != gpus) return std::nullopt;
  std::vector<NodeShare> shares;
  for (NodeCapacity* n : chosen) {
    shares.push_back({n->worker_id, n->free_gpus});
    n->free_gpus.clear();
  }
  return shares;
}

// A single-node share for `run`, taking capacity from `n`; nullopt when it does not fit.
std::optional<NodeShare> TakeOnNode(NodeCapacity& n, int gpus) {
  if (gpus == 0) {
    if (n.free_cpu_slots <= 0) return std::nullopt;
    --n.free_cpu_slots;
    return NodeShare{n.worker_id, {}};
  }
  if (static_cast<int>(n.free_gpus.size()) < gpus) return std::nullopt;
  NodeShare share{n.worker_id, {n.free_gpus.begin(), n.free_gpus.begin() + gpus}};
  n.free_gpus.erase(n.free_gpus.begin(), n.free_gpus.begin() + gpus);
  return share;
}

// Whole idle nodes for a run larger than any node; all-or-nothing. Nodes of a Slurm allocation
// only go together with nodes of the same allocation.
std::optional<std::vector<NodeShare>> TakeGang(std::vector<NodeCapacity*>& fits, int gpus) {
  std::set<std::string> allocations;
  for (NodeCapacity* n : fits) allocations.insert(n->allocation);
  for (const std::string& allocation : allocations) {
    std::vector<NodeCapacity*> same;
    for (NodeCapacity* n : fits) {
      if (n->allocation == allocation) same.push_back(n);
    }
    if (auto shares = TakeGangOf(same, gpus)) return shares;
  }
  return std::nullopt;
}

bool TakesScripts(const NodeCapacity& n, const QueuedRun& r) { return !r.script || n.allow_scripts; }

// Nodes of `model` first, the others after, each in their previous order.
void PreferModel(std::vector<NodeCapacity*>& nodes, const std::string& model) {
  if (model.empty()) return;
  std::stable_partition(nodes.begin(), nodes.end(),
                        [&](const NodeCapacity* n) { return n->gpu_model == model; });
}

std::string WaitReason(const QueuedRun& r, bool any_dataset_node, bool any_script_node,
                       int max_node_gpus) {
  if (!any_dataset_node && !r.pool.empty()) {
    return "no worker of pool '" + r.pool + "' with dataset '" + r.dataset +
           "' and time left for the run is connected";
  }
  if (!any_dataset_node) {
    return "no connected worker has dataset '" + r.dataset + "'";
  }
  if (!any_script_node) {
    return "no connected worker with dataset '" + r.dataset +
           "' runs scripts (start ablate-worker with --allow-scripts)";
  }
  if (r.gpus_per_run == 0) return "waiting for a free CPU slot";
  if (r.gpus_per_run > max_node_gpus && max_node_gpus > 0 && r.gpus_per_run % max_node_gpus) {
    return "needs " + std::to_string(r.gpus_per_run) + " GPUs, not a multiple of whole nodes";
  }
  return "waiting for " + std::to_string(r.gpus_per_run) + " free GPUs";
}

// Why no connected node could ever take `r` ("" when one could): more GPUs than the nodes that
// may take it (dataset, scripts, outside any pool) have, one node or all together. Runs of a pool
// wait for pilots of the pool's shape instead (checked at submit, pool_manager.h).
std::string Unschedulable(const QueuedRun& r, const std::vector<NodeCapacity*>& fits) {
  if (r.gpus_per_run == 0 || !r.pool.empty() || fits.empty()) return "";
  int most = 0, all = 0;
  for (const NodeCapacity* n : fits) most = std::max(most, n->total_gpus), all += n->total_gpus;
  if (r.gpus_per_run <= most || r.gpus_per_run <= all) return "";
  std::string why = std::string(kUnschedulablePrefix) + "needs " +
                    std::to_string(r.gpus_per_run) + " GPUs; ";
  if (all == 0) {
    why += "the connected workers that can take it have CPU slots only";
    if (r.script) why += " (a torchrun gang on CPU: gpus_per_run: 0 with processes: N)";
    return why;
  }
  return why + "the connected workers that can take it have " + std::to_string(all) +
         " in all (at most " + std::to_string(most) + " on one node)";
}

}  // namespace

Plan PlanAssignments(PlanInput in) {
  std::stable_sort(in.queue.begin(), in.queue.end(), [](const QueuedRun& a, const QueuedRun& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.sweep_id != b.sweep_id) return a.sweep_id < b.sweep_id;
    if (a.dispatch_order != b.dispatch_order) return a.dispatch_order < b.dispatch_order;
    return a.run_id < b.run_id;
  });
  int max_node_gpus = 0;
  for (const NodeCapacity& n : in.nodes) max_node_gpus = std::max(max_node_gpus, n.total_gpus);
  Plan plan;
  for (const QueuedRun& r : in.queue) {
    int& active = in.active_per_sweep[r.sweep_id];
    if (r.max_concurrent > 0 && active >= r.max_concurrent) {
      plan.waiting[r.run_id] = "sweep is at max_concurrent " + std::to_string(r.max_concurrent);
      continue;
    }
    std::vector<NodeCapacity*> fits;
    bool any_dataset_node = false;
    for (NodeCapacity& n : in.nodes) {
      if (!HasDataset(n, r.dataset) || !CanHold(n, r, in.now_ms)) continue;
      any_dataset_node = true;
      if (TakesScripts(n, r)) fits.push_back(&n);
    }
    std::optional<std::vector<NodeShare>> shares;
    if (r.gpus_per_run <= max_node_gpus || r.gpus_per_run == 0) {
      std::string* block_model = nullptr;
      if (r.gpus_per_run > 0) {
        block_model = &in.block_models[{r.sweep_id, r.block}];
        PreferModel(fits, *block_model);
      }
      for (NodeCapacity* n : fits) {
        if (std::optional<NodeShare> s = TakeOnNode(*n, r.gpus_per_run)) {
          shares = std::vector<NodeShare>{*s};
          if (block_model && block_model->empty()) *block_model = n->gpu_model;
          break;
        }
      }
    } else {
      shares = TakeGang(fits, r.gpus_per_run);
    }
    if (!shares) {
      std::string never = Unschedulable(r, fits);
      plan.waiting[r.run_id] =
          !never.empty() ? never : WaitReason(r, any_dataset_node, !fits.empty(), max_node_gpus);
      continue;
    }
    ++active;
    plan.placements.push_back({r.run_id, std::move(*shares)});
  }
  return plan;
}

}  // namespace ablate
