// RunPaced: the load benchmarks' runs at a fixed step rate.
#include "bench/coordinator/paced_runs.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

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
  mutable absl::Mutex mu{};
  std::vector<char> ok ABSL_GUARDED_BY(mu);
  Clock::time_point last_finished ABSL_GUARDED_BY(mu){};
  std::string why ABSL_GUARDED_BY(mu){};  // the first run's failure
};

void RunFailed(Shared& s, int i, const std::string& what) {
  absl::MutexLock lock(&s.mu);
  if (s.why.empty()) s.why = "run at position " + std::to_string(i) + ": " + what;
}

// One run, at position i: takes an assignment, waits at `assigned` for all runs (the
// completion step runs before_pacing), then paces its batches.
template <class Barrier>
void PaceRun(SimWorker& worker, Shared& s, int i, Barrier& assigned) {
  const PacedLoad& c = s.c;
  auto got = worker.NextAssignment(std::chrono::seconds(60));
  if (!got) {
    RunFailed(s, i, "no Assignment within 60 s");
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
  bool ok = worker.WaitAcked(a.attempt_id(), c.steps(), timeout);
  if (!ok) RunFailed(s, i, "not every batch acknowledged within 60 s");
  ok = ok && worker.Finish(a, c.steps(), timeout);
  if (ok && worker.Cancelled(a.attempt_id())) {
    ok = false;
    RunFailed(s, i, "its attempt was cancelled (" + worker.FirstCancel() + ")");
  } else if (!ok) {
    RunFailed(s, i, "RunFinished not acknowledged within 60 s");
  }
  absl::MutexLock lock(&s.mu);
  s.ok[size_t(i)] = ok;
  s.last_finished = std::max(s.last_finished, Clock::now());
}

}  // namespace

namespace {

// Submits c.runs() runs as SweepSizes(c.runs()) sweeps; false (result->why) when one fails.
bool SubmitSweeps(const CoordinatorProcess& coord, const PacedLoad& c, const std::string& tag,
                  PacedResult* result) {
  auto stub = v1::AblateService::NewStub(coord.NewChannel());
  std::vector<int> sizes = SweepSizes(c.runs());
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::string name = sizes.size() == 1 ? tag : tag + "-" + std::to_string(k + 1);
    std::optional<v1::SubmitSweepResponse> sweep =
        SubmitSweep(*stub, BenchSweepSpec(name, sizes[k], c.steps()));
    if (!sweep) {
      result->why = "SubmitSweep of " + name + " failed";
      return false;
    }
    result->sweep_ids.push_back(sweep->sweep().id());
  }
  return true;
}

// OK when the coordinator lists every run of every sweep as succeeded with every step stored.
absl::Status CheckSweeps(const CoordinatorProcess& coord, const PacedLoad& c,
                         const std::vector<int64_t>& sweep_ids) {
  auto stub = v1::AblateService::NewStub(coord.NewChannel());
  std::vector<int> sizes = SweepSizes(c.runs());
  for (size_t k = 0; k < sweep_ids.size(); ++k) {
    absl::Status s = CheckRunsSucceeded(*stub, sweep_ids[k], sizes[k], c.steps());
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// result->ok and why from the runs' outcomes, the Cancels and the coordinator's run states.
void Verdict(const CoordinatorProcess& coord, const PacedLoad& c, const Shared& s,
             PacedResult* result) {
  const int64_t expected = int64_t{c.runs()} * c.steps();
  std::string failed;
  {
    absl::MutexLock lock(&s.mu);
    failed = s.why;
  }
  if (!failed.empty()) {
    result->why = failed;
  } else if (result->cancels > 0) {
    result->why = std::to_string(result->cancels) + " Cancels, the first: " + result->why;
  } else if (static_cast<int64_t>(result->latencies_ms.size()) != expected) {
    result->why = std::to_string(result->latencies_ms.size()) + " batches acknowledged of " +
                  std::to_string(expected) + " sent";
  } else if (absl::Status st = CheckSweeps(coord, c, result->sweep_ids); !st.ok()) {
    result->why = st.ToString();
  } else {
    result->why.clear();
    result->ok = true;
  }
}

}  // namespace

PacedResult RunPaced(const CoordinatorProcess& coord, const PacedLoad& c, const std::string& tag,
                     SendTimes* times, const BeforePacing& before_pacing) {
  PacedResult result;
  std::vector<std::unique_ptr<SimWorker>> workers;
  for (int w = 0; w < c.workers; ++w) {
    workers.push_back(
        std::make_unique<SimWorker>(coord.NewChannel(), tag + "-" + std::to_string(w), c.slots));
    if (!workers.back()->Connect()) {
      result.why = "worker " + std::to_string(w) + " could not connect";
      return result;
    }
  }
  if (!SubmitSweeps(coord, c, tag, &result)) return result;
  Shared s{.c = c,
           .times = times,
           .run_ids = std::vector<int64_t>(size_t(c.runs()), 0),
           .ok = std::vector<char>(size_t(c.runs()), 0)};
  Clock::time_point t0 = Clock::now();
  auto all_assigned = [&]() noexcept {
    if (times) {
      for (int i = 0; i < c.runs(); ++i) times->index_of_run[s.run_ids[size_t(i)]] = i;
    }
    if (before_pacing) before_pacing(result.sweep_ids, s.run_ids);
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
    if (result.why.empty()) result.why = w->FirstCancel();
    w->Close();
  }
  result.points_per_second = static_cast<double>(result.latencies_ms.size()) / seconds;
  result.run_ids = s.run_ids;
  {
    absl::MutexLock lock(&s.mu);
    result.last_finished = s.last_finished;
  }
  Verdict(coord, c, s, &result);
  return result;
}

}  // namespace ablate::bench
