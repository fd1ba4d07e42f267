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
// An `ssh` pool (issue 38) is a list of rented nodes the coordinator reaches with OpenSSH:
//
//   pools:
//     - name: rented
//       kind: ssh
//       hosts: [ubuntu@203.0.113.5, ubuntu@203.0.113.6:2222]   # user@host[:port]
//       identity_file: /home/me/.ssh/id_ed25519   # optional: ssh's own defaults otherwise
//       known_hosts: /home/me/.ssh/known_hosts    # optional: ssh's default file otherwise
//       host_keys: strict         # strict (default): a host must be in known_hosts already;
//                                 # accept-new: a host seen the first time is added
//       ssh_args: []              # passed through to ssh and scp (-o ProxyJump=..., ...)
//       gpus_per_node: 8
//       min_nodes: 0              # workers kept up even with nothing to run
//       idle_exit: 10m            # a node's worker with no work for this long is stopped
//       bundle: dist/ablate-0.1.0-linux-x86_64.tar.gz   # ./dev.sh dist; relative to this file
//       worker: {bundle_dir: /opt/ablate, work_dir: /scratch/ablate, data_dir: /data,
//                checkpoint_dir: /scratch/ckpt, token_file: /etc/ablate/worker.token,
//                cpu_slots: 1, args: []}
//
// For an ssh pool, worker.token_file is the coordinator's own file: its token is written to a
// 0600 file on each node over the SSH channel, never on a command line; bundle_dir is where each
// bundle version is unpacked on the nodes (BUNDLE_DIR/SHA256/).
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

enum class PoolKind { kSlurm, kSsh };

// How a pilot (or an ssh pool's node) starts its worker.
struct PoolWorkerConfig {
  std::string binary = "ablate-worker";  // slurm only (ssh: BUNDLE_DIR/SHA256/bin/ablate-worker)
  std::string work_dir;    // per pilot a sub-folder of it; required
  std::string data_dir;    // "" = the worker's default (WORK_DIR/data)
  std::string token_file;  // "" = no worker token
  std::string bundle_dir;  // ssh only; required there
  std::string checkpoint_dir;  // ssh only; "" = runs of sweeps with checkpoint_every keep none
  int cpu_slots = 1;       // concurrent CPU-only runs per node
  std::vector<std::string> args;  // appended to the worker's command line
};

// One node of an ssh pool: "user@host:port" as written, and its parts.
struct SshHost {
  std::string text;  // as in the pools file
  std::string user;  // "" = ssh's default
  std::string host;  // a name, an IPv4 address, or an IPv6 address without its brackets
  int port = 0;      // 0 = ssh's default
  // [A-Za-z0-9._-] form of the host, unique in its pool: the node's worker is
  // "ssh/POOL/KEY".
  std::string key;
};

struct PoolSshConfig {
  std::vector<SshHost> hosts;
  std::string identity_file;  // "" = ssh's defaults
  std::string known_hosts;    // "" = ssh's default file
  bool accept_new_host_keys = false;
  std::vector<std::string> ssh_args;
  std::string bundle;  // the coordinator's bundle (.tar.gz); relative to the pools file
  int min_nodes = 0;
};

// `user@host[:port]` (an IPv6 address in brackets); INVALID_ARGUMENT saying what is wrong.
absl::StatusOr<SshHost> ParseSshHost(std::string_view text);

struct PoolConfig {
  std::string name;
  PoolKind kind = PoolKind::kSlurm;
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
  PoolSshConfig ssh;              // kind kSsh only; max_nodes is then its number of hosts
};

// Parses a pools file. INVALID_ARGUMENT listing every problem, one per line as
// "file:line:column: key.path: problem" (unknown keys with the closest valid names), like sweep
// specs. At least one pool; names unique.
absl::StatusOr<std::vector<PoolConfig>> ParsePoolsConfig(std::string_view yaml_text,
                                                         std::string_view file_name);

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_POOL_CONFIG_H_
