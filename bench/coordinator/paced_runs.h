// Runs that report at a fixed rate, as the load benchmarks drive them: simulated workers
// (sim_worker.h) take the runs of one submitted sweep, then each run sends one step point per
// MetricBatch at `steps_per_second` (paced with sleep_until, phases spread evenly over the
// period), waits for every Ack and finishes. Records each run's batch send times so that a
// reader of the run's stream can tell how far behind it is.
#ifndef ABLATE_BENCH_COORDINATOR_PACED_RUNS_H_
#define ABLATE_BENCH_COORDINATOR_PACED_RUNS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/coordinator/coordinator_process.h"
#include "bench/coordinator/sim_worker.h"

namespace ablate::bench {

struct PacedLoad {
  int workers = 20;
  int slots = 10;
  int seconds = 10;
  int steps_per_second = 20;
  int runs() const { return workers * slots; }
  int steps() const { return seconds * steps_per_second; }
};

// When each batch of each run went out (steady-clock nanoseconds, 0 = not yet), indexed by the
// run's position; written by its worker's pacing thread before the batch is sent, readable by any
// thread.
class SendTimes {
 public:
  SendTimes(int runs, int steps);
  void Set(int run, int64_t step, Clock::time_point t);
  // 0 when step is out of range or not sent yet.
  int64_t GetNs(int run, int64_t step) const;
  // Run id -> position; filled once every run is assigned, read-only afterwards.
  std::map<int64_t, int> index_of_run;

 private:
  int steps_;
  std::unique_ptr<std::atomic<int64_t>[]> ns_;
};

struct PacedResult {
  // Every run was assigned, every batch acknowledged with no Cancel, every run finished and the
  // coordinator lists each as RUN_SUCCEEDED. When false, `why` says what went wrong first and the
  // figures below describe refused or lost work: a bench reports `why`, not them.
  bool ok = false;
  std::string why;
  std::vector<double> latencies_ms;  // MetricBatch send -> Ack
  std::vector<double> ack_seconds;   // when each of those Acks came, s after the pacing's start
  double points_per_second = 0;  // acknowledged batches / (pacing start -> last batch's Ack)
  int cancels = 0;
  std::vector<int64_t> sweep_ids;   // SweepSizes(c.runs()) sweeps, in submit order
  std::vector<int64_t> run_ids;     // by position
  Clock::time_point last_finished;  // the last RunFinished's Ack
};

// Called once every run is assigned and started, before pacing: the sweeps and run ids.
using BeforePacing =
    std::function<void(const std::vector<int64_t>& sweep_ids, const std::vector<int64_t>& run_ids)>;

// Connects c.workers simulated workers (ids "<tag>-N"), submits c.runs() runs as
// SweepSizes(c.runs()) sweeps (a spec allows at most kMaxSeedsPerSweep seeds), each configured
// for c.steps() steps, waits until every run is assigned and started, calls `before_pacing`
// (readers attach there), then paces all runs to the end and checks that every one succeeded
// (PacedResult::ok). `times` (may be null) gets the send times.
PacedResult RunPaced(const CoordinatorProcess& coord, const PacedLoad& c, const std::string& tag,
                     SendTimes* times, const BeforePacing& before_pacing);

}  // namespace ablate::bench

#endif  // ABLATE_BENCH_COORDINATOR_PACED_RUNS_H_
