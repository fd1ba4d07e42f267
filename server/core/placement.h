// Where queued runs go: a pure function from the queue and the nodes' free capacity to a list of
// placements. Knows nothing of gRPC or SQLite; the dispatcher feeds it and carries it out.
//
// Rules (DESIGN §4, §7): runs are taken by priority (high first), then FIFO by sweep (lower sweep
// id first), then by the run's rank in its sweep's blocked, shuffled dispatch order
// (server/core/run_order.h), then run id. Block k of a sweep therefore never goes out ahead of
// block k-1's queued runs: they need the same resources, so a later run never fits where an
// earlier one of the same sweep did not.
// A run needs gpus_per_run GPUs on one node, or — when it needs more than any single node has —
// whole nodes all-or-nothing (gang scheduling; nodes[0] is rank 0). gpus_per_run 0 needs one
// CPU slot. A node only takes runs whose dataset it has, and script runs only when it allows them. A sweep never has more than
// max_concurrent runs assigned or running (0 = unlimited). A run that cannot be placed does not
// block lower-priority runs that fit elsewhere (backfill). A single-node GPU run prefers nodes
// whose GPU model is the one its block already runs on (PlanInput::block_models, and the first
// placement of the block in this plan); it still goes elsewhere rather than wait.
// Pools (issue 15): a run goes only to nodes of its sweep's pool ("" = nodes outside pools); a
// gang only to nodes of one Slurm allocation; a run whose expected duration is known does not
// start on a node whose allocation ends before the run would.
#ifndef ABLATE_SERVER_CORE_PLACEMENT_H_
#define ABLATE_SERVER_CORE_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ablate {

struct NodeCapacity {
  std::string worker_id;
  int total_gpus = 0;
  std::vector<int> free_gpus;  // indices on that node
  int free_cpu_slots = 0;
  std::vector<std::string> datasets;
  bool allow_scripts = false;  // started with --allow-scripts: takes script runs (issue 14)
  std::string gpu_model;  // of the node's first GPU; "" for none
  std::string pool;        // "" outside pools
  std::string allocation;  // Slurm allocation ("cluster/job.restart"); "" outside Slurm
  int64_t ends_ms = 0;     // when the allocation ends (time limit); 0 = not known
};

struct QueuedRun {
  int64_t run_id = 0;
  int64_t sweep_id = 0;
  int priority = 0;
  int gpus_per_run = 0;  // 0 = one CPU slot
  std::string dataset;   // "" = any node
  int max_concurrent = 0;
  bool script = false;  // runs the researcher's script: only nodes with allow_scripts take it
  int64_t dispatch_order = 0;  // rank in the sweep's dispatch order
  int block = 0;               // the run's seed: block of the dispatch order
  std::string pool;         // "" = nodes outside pools
  int64_t expected_ms = 0;  // how long it should take (finished runs of its variant); 0 = unknown
};

struct NodeShare {
  std::string worker_id;
  std::vector<int> gpus;  // empty for a CPU run
};

struct Placement {
  int64_t run_id = 0;
  std::vector<NodeShare> nodes;  // nodes[0] is rank 0
};

struct PlanInput {
  std::vector<QueuedRun> queue;  // any order; PlanAssignments sorts
  std::vector<NodeCapacity> nodes;
  std::map<int64_t, int> active_per_sweep;  // runs assigned or running now
  // GPU model of the nodes already running runs of a (sweep, block). A block's GPU runs prefer
  // nodes of that model, so that the runs compared within a block ran on the same hardware.
  std::map<std::pair<int64_t, int>, std::string> block_models;
  int64_t now_ms = 0;  // for NodeCapacity::ends_ms
};

// How a waiting reason begins when no connected node could ever take the run (more GPUs than
// they have): shown as such by `ablate sweep`, `ablate runs` and the dashboard.
inline constexpr std::string_view kUnschedulablePrefix = "unschedulable: ";

struct Plan {
  std::vector<Placement> placements;
  // Why each unplaced run waits, in words ("no connected worker has dataset 'x'"; starting with
  // kUnschedulablePrefix when no connected worker could ever take it).
  std::map<int64_t, std::string> waiting;
};

Plan PlanAssignments(PlanInput input);

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_PLACEMENT_H_
