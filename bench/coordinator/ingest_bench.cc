// Metric ingest throughput: simulated workers (threads speaking the real worker protocol) stream
// large MetricBatches into a real ablate-coordinator process with a SQLite file, keeping a window
// of unacknowledged batches per attempt. Reports committed points/s (acknowledged points / wall
// time) and its ratio to raw batched SQLite inserts of the same rows, measured in the same run
// (raw_sqlite_baseline.h). Target: >= 50% of raw.
// Usage: ingest_bench [workers] [runs_per_worker] [batches_per_run] [points_per_batch] [window]
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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
  int64_t points() const {
    return static_cast<int64_t>(runs()) * batches_per_run * points_per_batch;
  }
};

IngestConfig ParseArgs(int argc, char** argv) {
  IngestConfig c;
  int* fields[] = {&c.workers, &c.runs_per_worker, &c.batches_per_run, &c.points_per_batch,
                   &c.window};
  for (int i = 1; i < argc && i <= 5; ++i) *fields[i - 1] = std::atoi(argv[i]);
  return c;
}

// One run: RunStarted, every batch within the ack window, all acknowledged, RunFinished.
bool StreamRun(SimWorker& worker, const IngestConfig& c, std::atomic<int64_t>* acked_points) {
  auto got = worker.NextAssignment(std::chrono::seconds(30));
  if (!got) return false;
  const ablate::v1::Assignment& a = got->assignment;
  worker.SendRunStarted(a);
  ablate::v1::MetricBatch batch;
  batch.set_attempt_id(a.attempt_id());
  batch.set_fencing_token(a.fencing_token());
  for (int i = 0; i < c.points_per_batch; ++i) *batch.add_points() = ablate::bench::BenchPoint(i);
  const auto timeout = std::chrono::seconds(60);
  for (int seq = 1; seq <= c.batches_per_run; ++seq) {
    if (!worker.WaitAcked(a.attempt_id(), seq - c.window, timeout)) return false;
    batch.set_seq(seq);
    for (int i = 0; i < c.points_per_batch; ++i) {
      batch.mutable_points(i)->set_step(static_cast<int64_t>(seq - 1) * c.points_per_batch + i);
    }
    worker.SendBatch(batch);
  }
  if (!worker.WaitAcked(a.attempt_id(), c.batches_per_run, timeout)) return false;
  *acked_points += static_cast<int64_t>(c.batches_per_run) * c.points_per_batch;
  return worker.Finish(a, static_cast<int64_t>(c.batches_per_run) * c.points_per_batch, timeout);
}

// Submits the sweep and streams every run; returns the wall seconds from submit to the last
// run finished, and the acknowledged points.
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
  std::atomic<bool> ok{true};
  Clock::time_point t0 = Clock::now();
  if (!ablate::bench::SubmitSweep(*stub, ablate::bench::BenchSweepSpec("ingest", c.runs()))) {
    return -1;
  }
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    for (int r = 0; r < c.runs_per_worker; ++r) {
      threads.emplace_back([&, w = w.get()] {
        if (!StreamRun(*w, c, &acked_points)) ok = false;
      });
    }
  }
  for (std::thread& t : threads) t.join();
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& w : workers) w->Close();
  *acked = acked_points;
  return ok ? seconds : -1;
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
  std::cout << "ingest: " << c.workers << " workers x " << c.runs_per_worker << " runs, "
            << c.batches_per_run << " batches x " << c.points_per_batch << " points per run, window "
            << c.window << " (" << acked << " points)\n"
            << "  coordinator (acknowledged): " << coord_rate << " points/s  (" << seconds
            << " s, submit to last RunFinished acknowledged)\n"
            << "  raw SQLite, same rows, " << c.points_per_batch
            << " per transaction: " << raw_rate << " points/s  (" << raw.seconds << " s)\n"
            << "  ratio: coordinator = " << 100.0 * coord_rate / raw_rate
            << "% of raw  (target >= 50%)\n";
  return 0;
}
