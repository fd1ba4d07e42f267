// How many Slurm commands the pools loop runs per minute with 100 queued runs and 10 pilot
// allocations (issue 15's target: at most 4). The real PoolManager, store (SQLite in memory) and
// dispatcher; Slurm is a counting stand-in that answers squeue with ten running one-node pilots
// in the recorded 22.05 format and sbatch with a new job id. Printed per poll interval, for a
// quiet minute and for a minute with a submission every second (each kicks the loop).
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/pools/pool_manager.h"
#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

class CountingSlurm : public CommandRunner {
 public:
  CommandOutput Run(const std::vector<std::string>& argv) override {
    absl::MutexLock lock(&mu_);
    ++calls_[argv[0]];
    if (argv[0] == "sbatch") return {0, std::to_string(next_job_++) + "\n", ""};
    if (argv[0] != "squeue") return {0, "", ""};
    std::string out;
    for (int j = 1; j <= 10; ++j) {
      out += std::to_string(j) + "|RUNNING|None|1|1:00:00|n" + std::to_string(j) +
             "|ablate-bench|ablate coordinator=bench pool=lab nodes=1 sweep=1|0|gpu|\n";
    }
    return {0, out, ""};
  }
  std::map<std::string, int> Calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, int> calls_ ABSL_GUARDED_BY(mu_);
  int next_job_ ABSL_GUARDED_BY(mu_) = 100;
};

void Print(const char* what, const std::map<std::string, int>& calls, double minutes) {
  int total = 0;
  std::string detail;
  for (const auto& [cmd, n] : calls) {
    total += n;
    detail += " " + cmd + "=" + std::to_string(n);
  }
  std::printf("%-44s %6.2f Slurm calls/min (target <= 4; ratio to target %.2f):%s\n", what,
              total / minutes, total / minutes / 4.0, detail.c_str());
}

int Main() {
  std::unique_ptr<Store> store = std::move(Store::Open(":memory:", {})).value();
  ChangeFeed feed;
  Dispatcher dispatcher(store.get(), &feed, {});
  absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(
      "name: bench\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: 100\ngpus_per_run: 8\n"
      "dataset: d\npool: lab\n",
      "bench.yaml");
  if (!e.ok() || !store->CreateSweep(e->sweep, e->variants, e->runs).ok()) return 1;
  PoolConfig pool;
  pool.name = "lab";
  pool.partition = "gpu";
  pool.gpus_per_node = 8;
  pool.gres = "gpu:8";
  pool.max_nodes = 10;
  pool.worker.work_dir = "/tmp/ablate-slurm-calls-bench";
  // Simulated time: PollOnce is what the loop runs once per interval; the default interval.
  const PoolManagerOptions defaults;
  const double polls_per_minute = 60000.0 / defaults.poll_ms;
  {
    CountingSlurm slurm;
    PoolManagerOptions o;
    o.coordinator_id = "bench";
    o.coordinator_address = "head:7070";
    PoolManager manager({pool}, &slurm, store.get(), &dispatcher, o);
    for (int i = 0; i < 30; ++i) manager.PollOnce();
    Print("quiet, poll every 20 s (default):", slurm.Calls(), 30 / polls_per_minute);
  }
  {
    // The loop itself, sped up 100x (poll 200 ms, min 150 ms), kicked every 10 ms as if a sweep
    // were submitted every second: the rate limit keeps it to one squeue per min_poll_ms.
    CountingSlurm slurm;
    PoolManagerOptions o;
    o.coordinator_id = "bench";
    o.coordinator_address = "head:7070";
    o.poll_ms = defaults.poll_ms / 100;
    o.min_poll_ms = defaults.min_poll_ms / 100;
    PoolManager manager({pool}, &slurm, store.get(), &dispatcher, o);
    manager.Start();
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
    while (std::chrono::steady_clock::now() < end) {
      manager.Kick();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    manager.Stop();
    Print("a submission every second (100x sped up):", slurm.Calls(), 1.0);
  }
  return 0;
}

}  // namespace
}  // namespace ablate

int main() { return ablate::Main(); }
