// Script runs on the worker (issue 14): what a script variant's config says, the command line
// and environment it runs with, the run folder it runs in, and the local cache of code snapshots.
// No gRPC: snapshots come through an injected fetch function.
#ifndef ABLATE_WORKER_SCRIPT_LAUNCH_H_
#define ABLATE_WORKER_SCRIPT_LAUNCH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/code_snapshot.h"
#include "worker/script_output.h"

namespace ablate::worker {

// The "script" object of a variant config (server/sweep/script_expander.h), plus the run's seed
// and the sweep's target.
struct ScriptConfig {
  std::string path;      // the script's name in the snapshot: a file or a folder
  std::string snapshot;  // hex SHA-256
  std::string launch;    // python | torchrun | command
  std::string command;   // launch: command only
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  LogFormat log_format = LogFormat::kAuto;
  std::string data_link;  // "" = none
  int processes = 1;      // torchrun on a CPU slot: the gang's size (GPUs: one per GPU)
  std::optional<double> target_val_loss;
  int64_t seed = 0;
};

// True when the config JSON names a script (an object with "script").
bool IsScriptConfig(const std::string& config_json);
// INVALID_ARGUMENT naming the field for a config that is not a well-formed script config.
absl::StatusOr<ScriptConfig> ParseScriptConfig(const std::string& config_json);

// Where and how one node of a run launches.
struct LaunchContext {
  std::string python = "python3";
  std::string run_dir;   // absolute; holds the snapshot and is the working directory
  std::string data_dir;  // absolute folder of the run's dataset on this worker
  int64_t run_id = 0;
  int gpus = 0;          // GPUs of this node's share (0 = a CPU run: one process)
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;  // node 0's rendezvous (one node: 127.0.0.1 and a port picked for
  int master_port = 0;      // the run, so two runs on one machine never share a store)
};

// The command line: python `<python> <script> args...`; torchrun `<python> -m
// torch.distributed.run --nproc_per_node G --nnodes N --node_rank R --master_addr A
// --master_port P --redirects 1 --tee 1 --log_dir RUN/torchrun-logs <script>
// args...` (G = the run's GPUs on this node, or config.processes on a CPU slot); command:
// `/bin/sh -c <expanded>`, where {args} is the args shell-quoted (script_command.h).
absl::StatusOr<std::vector<std::string>> ScriptArgv(const ScriptConfig& config,
                                                    const LaunchContext& context);
// NAME=value entries added to the worker's environment: the spec's env, then ABLATE_SEED,
// ABLATE_RUN_ID, ABLATE_RUN_DIR, ABLATE_DATA_DIR (CUDA_VISIBLE_DEVICES is the supervisor's).
std::vector<std::string> ScriptEnv(const ScriptConfig& config, const LaunchContext& context);

// Writes the snapshot into context.run_dir and makes data_link (if any) a symlink there to
// context.data_dir. INTERNAL for file system errors.
absl::Status PrepareRunDir(const Snapshot& files, const ScriptConfig& config,
                           const LaunchContext& context);

// A free TCP port on this machine for node 0's torch rendezvous (the kernel's choice).
absl::StatusOr<int> PickFreePort();

// Snapshots by hash under a folder (one file per hash, written atomically); a miss is fetched,
// checked against its hash and kept. Thread-safe; concurrent Gets of one hash fetch it once.
class SnapshotCache {
 public:
  using Fetch = std::function<absl::StatusOr<Snapshot>(const std::string& hash)>;
  SnapshotCache(std::string dir, Fetch fetch);

  // The snapshot; `fetched` (when given) says whether it came from the coordinator just now.
  // DATA_LOSS when what arrived does not hash to `hash`; the fetch's own errors otherwise.
  absl::StatusOr<Snapshot> Get(const std::string& hash, bool* fetched = nullptr);

 private:
  std::optional<Snapshot> Load(const std::string& hash);
  absl::Status Store(const std::string& hash, const Snapshot& files);

  const std::string dir_;
  const Fetch fetch_;
  absl::Mutex mu_;  // held across a fetch: one fetch at a time, never the same hash twice
};

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_SCRIPT_LAUNCH_H_
