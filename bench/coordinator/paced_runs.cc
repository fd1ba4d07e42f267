// RunPaced: the load benchmarks' runs at a fixed step rate.
#include "bench/coordinator/paced_runs.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <mutex>
#include <thread>

namespace ablate::bench {

SendTimes::SendTimes(int runs, int steps)
    : steps_(steps), ns_(new std::atomic<int64_t>[size_t(runs) * size_t(steps)]) {
  for (size_t i = 0; i < size_t(runs) * size_t(steps); ++i) ns_[i].store(0);
}

void SendTimes::Set(int run, int64_t step, Clock::time_point t) {
  ns_[size_t(run) * size_t(steps_) + size_t(step)].store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(),
      std::memory_order_release);
}

int64_t SendTimes::GetNs(int run, int64_t step) const {
  if (step < 0 || step >= steps_) return 0;
  return ns_[size_t(run) * size_t(steps_) + size_t(step)].load(std::memory_order_acquire);
}

namespace {

struct Shared {
  const PacedLoad& c;
  SendTimes* times;
  std::vector<int64_t> run_ids;
  std::mutex mu;
  std::vector<char> ok;
  Clock::time_point last_finished;
};

// One run, at position i: takes an assignment, waits at `assigned` for all runs (the
// completion step runs before_pacing), then paces its batches.
template <class Barrier>
void PaceRun(SimWorker& worker, Shared& s, int i, Barrier& assigned) {
  const PacedLoad& c = s.c;
  auto got = worker.NextAssignment(std::chrono::seconds(60));
  if (!got) {
    assigned.arrive_and_drop();
    return;
  }
  const v1::Assignment& a = got->assignment;
  s.run_ids[size_t(i)] = a.run_id();
  worker.SendRunStarted(a);
  assigned.arrive_and_wait();
  const auto period = std::chrono::duration<double>(1.0 / c.steps_per_second);
  const double phase = static_cast<double>(i) / c.runs();
  Clock::time_point start =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(period * phase);
  v1::MetricBatch batch;
  batch.set_attempt_id(a.attempt_id());
  batch.set_fencing_token(a.fencing_token());
  for (int step = 0; step < c.steps(); ++step) {
    std::this_thread::sleep_until(start +
                                  std::chrono::duration_cast<Clock::duration>(period * step));
    batch.set_seq(step + 1);
    *batch.mutable_points() = {};
    *batch.add_points() = BenchPoint(step);
    if (s.times) s.times->Set(i, step, Clock::now());
    worker.SendBatch(batch);
  }
  const auto timeout = std::chrono::seconds(60);
  bool ok = worker.WaitAcked(a.attempt_id(), c.steps(), timeout) &&
            worker.Finish(a, c.steps(), timeout);
  std::lock_guard<std::mutex> lock(s.mu);
  s.ok[size_t(i)] = ok;
  s.last_finished = std::max(s.last_finished, Clock::now());
}

}  // namespace

PacedResult RunPaced(const CoordinatorProcess& coord, const PacedLoad& c, const std::string& tag,
                     SendTimes* times,
                     const std::function<void(int64_t, const std::vector<int64_t>&)>& before_pacing) {
  PacedResult result;
  std::vector<std::unique_ptr<SimWorker>> workers;
  for (int w = 0; w < c.workers; ++w) {
    workers.push_back(
        std::make_unique<SimWorker>(coord.NewChannel(), tag + "-" + std::to_string(w), c.slots));
    if (!workers.back()->Connect()) return result;
  }
  auto stub = v1::AblateService::NewStub(coord.NewChannel());
  std::optional<v1::SubmitSweepResponse> sweep = SubmitSweep(*stub, BenchSweepSpec(tag, c.runs()));
  if (!sweep) return result;
  result.sweep_id = sweep->sweep().id();
  Shared s{c, times, std::vector<int64_t>(size_t(c.runs()), 0), {},
           std::vector<char>(size_t(c.runs()), 0), {}};
  Clock::time_point t0 = Clock::now();
  auto all_assigned = [&]() noexcept {
    if (times) {
      for (int i = 0; i < c.runs(); ++i) times->index_of_run[s.run_ids[size_t(i)]] = i;
    }
    if (before_pacing) before_pacing(result.sweep_id, s.run_ids);
    t0 = Clock::now();  // points/s over the pacing only
  };
  std::barrier assigned(c.runs(), all_assigned);
  std::vector<std::thread> threads;
  for (int i = 0; i < c.runs(); ++i) {
    threads.emplace_back([&, i] { PaceRun(*workers[size_t(i / c.slots)], s, i, assigned); });
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
  result.ok = std::all_of(s.ok.begin(), s.ok.end(), [](char b) { return b != 0; });
  result.run_ids = s.run_ids;
  result.last_finished = s.last_finished;
  return result;
}

}  // namespace ablate::bench
