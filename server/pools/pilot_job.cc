// sbatch command lines for pilots.
#include "server/pools/pilot_job.h"

#include "common/script_command.h"

namespace ablate {
namespace {

// What the pilot and its test-only twin share: where, how many nodes, what per node.
std::vector<std::string> ShapeArgs(const PoolConfig& pool, int nodes) {
  std::vector<std::string> a = {"--partition=" + pool.partition, "--nodes=" + std::to_string(nodes),
                                "--ntasks-per-node=1"};
  if (!pool.account.empty()) a.push_back("--account=" + pool.account);
  if (!pool.qos.empty()) a.push_back("--qos=" + pool.qos);
  if (!pool.gres.empty()) a.push_back("--gres=" + pool.gres);
  if (pool.time_limit_s > 0) a.push_back("--time=" + FormatSlurmTime(pool.time_limit_s));
  return a;
}

}  // namespace

std::string PilotJobName(std::string_view coordinator_id) {
  return "ablate-" + std::string(coordinator_id);
}

std::string PilotPayload(const PoolConfig& pool, const std::string& coordinator_address) {
  const PoolWorkerConfig& w = pool.worker;
  std::vector<std::string> argv = {w.binary,     "--slurm",  "--pool",      pool.name,
                                   "--coordinator", coordinator_address, "--work-dir", w.work_dir,
                                   "--cpu-slots",  std::to_string(w.cpu_slots), "--idle-exit-ms",
                                   std::to_string(pool.idle_exit_ms)};
  if (!w.data_dir.empty()) argv.insert(argv.end(), {"--data-dir", w.data_dir});
  if (!w.token_file.empty()) argv.insert(argv.end(), {"--token-file", w.token_file});
  argv.insert(argv.end(), w.args.begin(), w.args.end());
  // The worker's own folders and files are mounted at their own path inside a container.
  std::vector<std::string> launch = ContainerLaunchWords(
      pool.container, pool.gpus_per_node > 0, {w.work_dir, w.data_dir, w.token_file});
  argv.insert(argv.begin(), launch.begin(), launch.end());
  std::string line = "exec srun --kill-on-bad-exit=0";
  for (const std::string& a : argv) line += " " + ShellQuote(a);
  return line;
}

std::vector<std::string> PilotSbatchArgs(const PoolConfig& pool, const PilotTag& tag,
                                         const std::string& coordinator_address) {
  std::vector<std::string> a = {"sbatch", "--parsable", "--job-name=" + PilotJobName(tag.coordinator),
                                "--comment=" + FormatPilotTag(tag)};
  for (std::string& s : ShapeArgs(pool, tag.nodes)) a.push_back(std::move(s));
  a.push_back("--no-requeue");
  // B: the batch shell, which is srun after `exec`; srun passes it to every task.
  a.push_back("--signal=B:USR1@" + std::to_string(pool.signal_before_s));
  a.push_back("--output=" + pool.worker.work_dir + "/slurm-%j.out");
  a.insert(a.end(), pool.sbatch_args.begin(), pool.sbatch_args.end());
  a.push_back("--wrap=" + PilotPayload(pool, coordinator_address));
  return a;
}

std::vector<std::string> PilotTestArgs(const PoolConfig& pool, int nodes) {
  std::vector<std::string> a = {"sbatch", "--test-only"};
  for (std::string& s : ShapeArgs(pool, nodes)) a.push_back(std::move(s));
  a.insert(a.end(), pool.sbatch_args.begin(), pool.sbatch_args.end());
  a.push_back("--wrap=true");
  return a;
}

}  // namespace ablate
