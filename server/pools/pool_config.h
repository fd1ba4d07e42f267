// Pools (DESIGN §4): where nodes belong to Slurm, the coordinator asks Slurm for allocations
// (pilot jobs running `ablate-worker --slurm`) instead of waiting for workers started by hand.
// This is the `--pools FILE` configuration, read once at coordinator start:
//
//   pools:
//     - name: h100                # [A-Za-z0-9._-]; sweeps say `pool: h100`
//       kind: slurm               # the only kind
//       partition: gpu
//       account: speedrun         # optional
//       qos: normal               # optional
//       gpus_per_node: 8          # 0 for CPU-only nodes
//       gres: gpu:8               # asked per node; default gpu:<gpus_per_node> (none for 0)
//       max_nodes: 4              # never hold more nodes than this, pending ones included
//       time_limit: 2:00:00       # Slurm's time format; default: the partition's
//       idle_exit: 5m             # a pilot with no work for this long exits
//                                 # (common/spec/duration.h: 500ms, 30s, 5m, 2h)
//       signal_before: 2m         # USR1 (drain) this long before the time limit
//       sbatch_args: []           # passed through to sbatch
//       worker: {binary: /opt/ablate/bin/ablate-worker, work_dir: /scratch/ablate,
//                data_dir: /data/datasets, token_file: /etc/ablate/worker.token,
//                cpu_slots: 1, args: []}
//       container: {runtime: pyxis, image: /shared/ablate.sqsh, mounts: [], args: []}
//                                 # optional: the worker runs in this image (pool_container.h)
//
// Core logic: no I/O, no gRPC, no SQLite.
#ifndef ABLATE_SERVER_POOLS_POOL_CONFIG_H_
#define ABLATE_SERVER_POOLS_POOL_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/pools/pool_container.h"

namespace ablate {

// How a pilot starts its worker.
struct PoolWorkerConfig {
  std::string binary = "ablate-worker";
  std::string work_dir;    // per pilot a sub-folder of it; required
  std::string data_dir;    // "" = the worker's default (WORK_DIR/data)
  std::string token_file;  // "" = no worker token
  int cpu_slots = 1;       // concurrent CPU-only runs per node
  std::vector<std::string> args;  // appended to the worker's command line
};

struct PoolConfig {
  std::string name;
  std::string partition;
  std::string account;  // "" = the user's default
  std::string qos;      // "" = the default
  int gpus_per_node = 0;
  std::string gres;     // "" = ask for no generic resources
  int max_nodes = 1;
  int64_t time_limit_s = 0;  // 0 = the partition's default
  int64_t idle_exit_ms = 5 * 60 * 1000;
  int64_t signal_before_s = 120;
  std::vector<std::string> sbatch_args;
  PoolWorkerConfig worker;
  PoolContainerConfig container;  // runtime kNone: no container
};

// Parses a pools file. INVALID_ARGUMENT listing every problem, one per line as
// "file:line:column: key.path: problem" (unknown keys with the closest valid names), like sweep
// specs. At least one pool; names unique.
absl::StatusOr<std::vector<PoolConfig>> ParsePoolsConfig(std::string_view yaml_text,
                                                         std::string_view file_name);

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_POOL_CONFIG_H_
