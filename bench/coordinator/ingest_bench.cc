// Metric ingest throughput: simulated workers (threads speaking the real worker protocol) stream
// large MetricBatches into a real ablate-coordinator process with a SQLite file, keeping a window
// of unacknowledged batches per attempt. Reports committed points/s (acknowledged points / wall
// time) and its ratio to raw batched SQLite inserts of the same rows, measured in the same run
// (raw_sqlite_baseline.h). Target: >= 80% of raw (issue 28). The runs are configured for every
// step they send (batches x points); when any batch is refused (a Cancel) or any run does not
// end RUN_SUCCEEDED, the bench prints why, no figures, and exits 1.
// Usage: ingest_bench [workers] [runs_per_worker] [batches_per_run] [points_per_batch] [window]
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "bench/coordinator/coordinator_process.h"
#include "bench/coordinator/raw_sqlite_baseline.h"
#include "bench/coordinator/sim_worker.h"

namespace {

using ablate::bench::Clock;
using ablate::bench::SimWorker;

struct IngestConfig {
  int workers = 4;
  int runs_per_worker = 2;
  int batches_per_run = 50;
  int points_per_batch = 500;
  int window = 4;  // unacknowledged batches per attempt
  int runs() const { return workers * runs_per_worker; }
  int64_t steps() const { return static_cast<int64_t>(batches_per_run) * points_per_batch; }
  int64_t points() const { return runs() * steps(); }
};

IngestConfig ParseArgs(int argc, char** argv) {
  IngestConfig c;
  int* fields[] = {&c.workers, &c.runs_per_worker, &c.batches_per_run, &c.points_per_batch,
                   &c.window};
  for (int i = 1; i < argc && i <= 5; ++i) *fields[i - 1] = std::atoi(argv[i]);
  return c;
}

// One run: RunStarted, every batch within the ack window, all acknowledged, RunFinished. ""
// when every batch and the RunFinished were acknowledged with no Cancel, else why not.
std::string StreamRun(SimWorker& worker, const IngestConfig& c,
                      std::atomic<int64_t>* acked_points) {
  auto got = worker.NextAssignment(std::chrono::seconds(30));
  if (!got) return "no Assignment within 30 s";
  const ablate::v1::Assignment& a = got->assignment;
  worker.SendRunStarted(a);
  ablate::v1::MetricBatch batch;
  batch.set_attempt_id(a.attempt_id());
  batch.set_fencing_token(a.fencing_token());
  for (int i = 0; i < c.points_per_batch; ++i) *batch.add_points() = ablate::bench::BenchPoint(i);
  const auto timeout = std::chrono::seconds(60);
  for (int seq = 1; seq <= c.batches_per_run; ++seq) {
    if (!worker.WaitAcked(a.attempt_id(), seq - c.window, timeout)) return "no Ack within 60 s";
    if (worker.Cancelled(a.attempt_id())) return worker.FirstCancel();
    batch.set_seq(seq);
    for (int i = 0; i < c.points_per_batch; ++i) {
      batch.mutable_points(i)->set_step(static_cast<int64_t>(seq - 1) * c.points_per_batch + i);
    }
    worker.SendBatch(batch);
  }
  if (!worker.WaitAcked(a.attempt_id(), c.batches_per_run, timeout)) return "no Ack within 60 s";
  if (!worker.Finish(a, c.steps(), timeout)) return "RunFinished not acknowledged within 60 s";
  if (worker.Cancelled(a.attempt_id())) return worker.FirstCancel();
  *acked_points += c.steps();
  return "";
}

// Submits the sweep and streams every run; returns the wall seconds from submit to the last
// run finished, and the acknowledged points; -1 (after printing why) when any run failed.
double MeasureCoordinator(const ablate::bench::CoordinatorProcess& coord, const IngestConfig& c,
                          int64_t* acked) {
  std::vector<std::unique_ptr<SimWorker>> workers;
  for (int w = 0; w < c.workers; ++w) {
    workers.push_back(std::make_unique<SimWorker>(coord.NewChannel(), "ingest-" + std::to_string(w),
                                                  c.runs_per_worker));
    if (!workers.back()->Connect()) return -1;
  }
  auto stub = ablate::v1::AblateService::NewStub(coord.NewChannel());
  std::atomic<int64_t> acked_points{0};
  absl::Mutex mu;
  std::string why ABSL_GUARDED_BY(mu);  // the first run's failure
  Clock::time_point t0 = Clock::now();
  auto sweep = ablate::bench::SubmitSweep(
      *stub, ablate::bench::BenchSweepSpec("ingest", c.runs(), c.steps()));
  if (!sweep) return -1;
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    for (int r = 0; r < c.runs_per_worker; ++r) {
      threads.emplace_back([&, w = w.get()] {
        std::string failed = StreamRun(*w, c, &acked_points);
        absl::MutexLock lock(&mu);
        if (!failed.empty() && why.empty()) why = failed;
      });
    }
  }
  for (std::thread& t : threads) t.join();
  absl::MutexLock lock(&mu);  // the threads are joined: held for the analysis
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  int cancels = 0;
  for (auto& w : workers) {
    cancels += w->cancels();
    if (why.empty()) why = w->FirstCancel();
    w->Close();
  }
  absl::Status runs =
      ablate::bench::CheckRunsSucceeded(*stub, sweep->sweep().id(), c.runs(), c.steps());
  if (why.empty() && !runs.ok()) why = runs.ToString();
  if (!why.empty()) {
    std::cerr << "ingest_bench: the coordinator run failed, no figures (" << cancels
              << " Cancels): " << why << "\n";
    return -1;
  }
  *acked = acked_points;
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  IngestConfig c = ParseArgs(argc, argv);
  ablate::bench::RawInsertShape shape{c.runs(), c.batches_per_run, c.points_per_batch};
  auto raw = ablate::bench::MeasureRawInserts(ABLATE_MIGRATIONS_DIR, shape);
  if (!raw.ok) return 1;
  int64_t acked = 0;
  double seconds;
  {
    ablate::bench::CoordinatorProcess coord(ABLATE_COORDINATOR_BIN);
    if (!coord.ok()) return 1;
    seconds = MeasureCoordinator(coord, c, &acked);
    if (seconds < 0) {
      std::cerr << "ingest failed; coordinator stderr:\n" << coord.Stderr();
      return 1;
    }
  }
  double coord_rate = static_cast<double>(acked) / seconds;
  double raw_rate = static_cast<double>(c.points()) / raw.seconds;
  if (acked != c.points()) {
    std::cerr << "ingest_bench: " << acked << " points acknowledged of " << c.points() << "\n";
    return 1;
  }
  std::cout << "ingest: " << c.workers << " workers x " << c.runs_per_worker << " runs, "
            << c.batches_per_run << " batches x " << c.points_per_batch
            << " points per run, window " << c.window << " (" << acked
            << " points; every run succeeded)\n"
            << "  coordinator (acknowledged): " << coord_rate << " points/s  (" << seconds
            << " s, submit to last RunFinished acknowledged)\n"
            << "  raw SQLite, same rows, " << c.points_per_batch << " per transaction: " << raw_rate
            << " points/s  (" << raw.seconds << " s)\n"
            << "  ratio: coordinator = " << 100.0 * coord_rate / raw_rate
            << "% of raw  (target >= 80%)\n";
  return 0;
}
