// A real Slurm cluster for tests, on this one machine (reference/slurm.md §3): its own munged,
// slurmctld and one slurmd per node, each node with fake GPUs (character devices), all under one
// folder with free loopback ports and its own slurm.conf. Every Slurm command a test runs must
// carry Env() (SLURM_CONF), as must any process that talks to this cluster (the coordinator).
// The daemons run in the foreground as children of the test; Stop() cancels every job and stops
// them by PID: slurmd first, then slurmctld, then munged.
#ifndef ABLATE_TESTS_UTIL_SLURM_CLUSTER_H_
#define ABLATE_TESTS_UTIL_SLURM_CLUSTER_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace ablate::testing {

struct SlurmClusterOptions {
  int nodes = 2;          // n1, n2, ...
  int gpus_per_node = 8;  // fake devices per node (gres gpu:N)
  int cpus_per_node = 2;
  int slurmd_timeout_s = 30;  // a killed slurmd's node goes DOWN after about this much
};

class SlurmCluster {
 public:
  // Why no cluster can run here ("" when one can): Slurm's daemons are missing, or this is not
  // root (slurmd and SlurmUser=root need it). Tests skip, naming the reason.
  static std::string UnavailableReason();

  // Writes the config under `dir` (which must exist and outlive the cluster), starts the daemons
  // and waits until every node is idle. nullptr with `*error` set when it does not come up.
  static std::unique_ptr<SlurmCluster> Start(const std::string& dir, SlurmClusterOptions options,
                                             std::string* error);
  ~SlurmCluster();  // Stop()
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // {"SLURM_CONF": the cluster's slurm.conf}.
  std::map<std::string, std::string> Env() const { return {{"SLURM_CONF", conf_path_}}; }
  const std::string& conf_path() const { return conf_path_; }
  const std::string& cluster_name() const { return cluster_name_; }
  std::string NodeName(int i) const { return "n" + std::to_string(i + 1); }

  // Runs a Slurm command (sbatch, squeue, scancel, ...; a bare name is taken from /usr/bin)
  // against this cluster.
  ProcessResult Run(std::vector<std::string> argv,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

  // SIGKILLs node i's slurmd (its jobs' tasks keep running until it is started again).
  void KillNode(int i);
  // Starts node i's slurmd again (after KillNode).
  void RestartNode(int i);
  // Polls `sinfo` until node i's state contains `state` ("down", "idle"); false on timeout.
  bool WaitNodeState(int i, const std::string& state, std::chrono::milliseconds timeout) const;

  // The last lines of every daemon's log, for a failing test's message.
  std::string LogTails() const;

  // Cancels every job, waits for the queue to drain, stops the daemons. Idempotent.
  void Stop();

 private:
  SlurmCluster(std::string dir, SlurmClusterOptions options);
  bool WriteConfig(std::string* error);
  bool StartDaemons(std::string* error);
  bool WaitAllIdle(std::chrono::milliseconds timeout) const;
  std::unique_ptr<Subprocess> StartSlurmd(int i);
  static void StopProcess(std::unique_ptr<Subprocess>& p, std::chrono::milliseconds grace);

  const std::string dir_;
  const SlurmClusterOptions options_;
  std::string conf_path_;
  std::string cluster_name_;
  std::unique_ptr<Subprocess> munged_, slurmctld_;
  std::vector<std::unique_ptr<Subprocess>> slurmd_;
};

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_UTIL_SLURM_CLUSTER_H_
