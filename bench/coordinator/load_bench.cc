// Acknowledgement latency under load: N concurrent runs on simulated workers, each sending one
// step point per MetricBatch at 20 steps/s (paced with sleep_until, phases spread evenly over
// the 50 ms period) into a real ablate-coordinator process. Reports send -> Ack latency
// percentiles and the achieved points/s; the baseline, measured first in the same run, is the
// same measurement with a single run. Target: p99 < 100 ms at 200 runs.
// Usage: load_bench [workers] [slots_per_worker] [seconds] [steps_per_second]
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/coordinator/coordinator_process.h"
#include "bench/coordinator/sim_worker.h"

namespace {

using ablate::bench::Clock;
using ablate::bench::Percentile;
using ablate::bench::SimWorker;

struct LoadConfig {
  int workers = 20;
  int slots = 10;
  int seconds = 10;
  int steps_per_second = 20;
  int runs() const { return workers * slots; }
  int steps() const { return seconds * steps_per_second; }
};

struct LoadResult {
  bool ok = false;
  std::vector<double> latencies_ms;
  double points_per_second = 0;
  int cancels = 0;
};

// One run: waits for every run to be assigned, then paces its batches; `phase` in [0, 1).
bool PaceRun(SimWorker& worker, const LoadConfig& c, double phase, std::latch& assigned) {
  auto got = worker.NextAssignment(std::chrono::seconds(30));
  if (!got) {
    assigned.count_down();
    return false;
  }
  const ablate::v1::Assignment& a = got->assignment;
  worker.SendRunStarted(a);
  assigned.arrive_and_wait();
  const auto period = std::chrono::duration<double>(1.0 / c.steps_per_second);
  Clock::time_point start =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(period * phase);
  ablate::v1::MetricBatch batch;
  batch.set_attempt_id(a.attempt_id());
  batch.set_fencing_token(a.fencing_token());
  for (int step = 0; step < c.steps(); ++step) {
    std::this_thread::sleep_until(start +
                                  std::chrono::duration_cast<Clock::duration>(period * step));
    batch.set_seq(step + 1);
    *batch.mutable_points() = {};
    *batch.add_points() = ablate::bench::BenchPoint(step);
    worker.SendBatch(batch);
  }
  const auto timeout = std::chrono::seconds(30);
  return worker.WaitAcked(a.attempt_id(), c.steps(), timeout) && worker.Finish(a, c.steps(), timeout);
}

std::vector<std::unique_ptr<SimWorker>> ConnectWorkers(
    const ablate::bench::CoordinatorProcess& coord, const LoadConfig& c, const std::string& tag) {
  std::vector<std::unique_ptr<SimWorker>> workers;
  for (int w = 0; w < c.workers; ++w) {
    workers.push_back(std::make_unique<SimWorker>(coord.NewChannel(),
                                                  tag + "-" + std::to_string(w), c.slots));
    if (!workers.back()->Connect()) return {};
  }
  return workers;
}

LoadResult Measure(const ablate::bench::CoordinatorProcess& coord, const LoadConfig& c,
                   const std::string& tag) {
  LoadResult result;
  std::vector<std::unique_ptr<SimWorker>> workers = ConnectWorkers(coord, c, tag);
  if (workers.empty()) return result;
  auto stub = ablate::v1::AblateService::NewStub(coord.NewChannel());
  if (!ablate::bench::SubmitSweep(*stub, ablate::bench::BenchSweepSpec(tag, c.runs()))) {
    return result;
  }
  std::latch assigned(c.runs());
  std::vector<std::thread> threads;
  std::vector<char> ok(c.runs(), 0);
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < c.runs(); ++i) {
    threads.emplace_back([&, i] {
      ok[i] = PaceRun(*workers[i / c.slots], c, static_cast<double>(i) / c.runs(), assigned);
    });
  }
  for (std::thread& t : threads) t.join();
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& w : workers) {
    std::vector<double> l = w->TakeLatenciesMs();
    result.latencies_ms.insert(result.latencies_ms.end(), l.begin(), l.end());
    result.cancels += w->cancels();
    w->Close();
  }
  result.points_per_second = static_cast<double>(result.latencies_ms.size()) / seconds;
  result.ok = std::all_of(ok.begin(), ok.end(), [](char b) { return b != 0; });
  return result;
}

void Print(const std::string& label, const LoadResult& r) {
  const auto& l = r.latencies_ms;
  std::cout << "  " << label << ": " << l.size() << " batches acknowledged, "
            << r.points_per_second << " points/s; send->Ack p50 " << Percentile(l, 0.5)
            << " ms, p90 " << Percentile(l, 0.9) << " ms, p99 " << Percentile(l, 0.99)
            << " ms, max " << Percentile(l, 1.0) << " ms" << (r.ok ? "" : "  (SOME RUNS FAILED)")
            << (r.cancels ? "  (" + std::to_string(r.cancels) + " Cancels)" : "") << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  LoadConfig c;
  int* fields[] = {&c.workers, &c.slots, &c.seconds, &c.steps_per_second};
  for (int i = 1; i < argc && i <= 4; ++i) *fields[i - 1] = std::atoi(argv[i]);
  ablate::bench::CoordinatorProcess coord(ABLATE_COORDINATOR_BIN);
  if (!coord.ok()) return 1;
  LoadConfig one = c;
  one.workers = 1;
  one.slots = 1;
  LoadResult base = Measure(coord, one, "load-1");
  LoadResult full = Measure(coord, c, "load-" + std::to_string(c.runs()));
  std::cout << "metric batch send->Ack latency, 1 point per batch at " << c.steps_per_second
            << " steps/s per run for " << c.seconds << " s (" << c.workers << " workers x "
            << c.slots << " CPU slots):\n";
  Print("1 run  ", base);
  Print(std::to_string(c.runs()) + " runs", full);
  std::cout << "  target: p99 < 100 ms at 200 runs, " << 200 * c.steps_per_second
            << " points/s offered\n"
            << "  ratio: p99(" << c.runs() << ")/p99(1) = "
            << Percentile(full.latencies_ms, 0.99) / Percentile(base.latencies_ms, 0.99) << "\n";
  return base.ok && full.ok ? 0 : 1;
}
