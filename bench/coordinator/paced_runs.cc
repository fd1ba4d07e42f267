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

// After its batches: waits for their Acks, then RunFinished and its Ack; records the outcome.
void EndRun(SimWorker& worker, Shared& s, int i, const v1::Assignment& a) {
  const PacedLoad& c = s.c;
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

// The runs of one simulated worker, at positions first .. first + count - 1, on one thread (a real
// worker streams every run of its node over its one stream; a thread per run cost the bench's
// side of the two cores 2,000 wake-ups per step round): takes an assignment per run, waits at
// `assigned` for all workers (the completion step runs before_pacing), then paces every run's
// batches in the order of their send times, then ends each run.
template <class Barrier>
void PaceWorker(SimWorker& worker, Shared& s, int first, int count, Barrier& assigned) {
  const PacedLoad& c = s.c;
  std::vector<v1::Assignment> runs;
  for (int k = 0; k < count; ++k) {
    auto got = worker.NextAssignment(std::chrono::seconds(60));
    if (!got) {
      RunFailed(s, first + k, "no Assignment within 60 s");
      assigned.arrive_and_drop();
      return;
    }
    runs.push_back(got->assignment);
    s.run_ids[size_t(first + k)] = got->assignment.run_id();
    worker.SendRunStarted(got->assignment);
  }
  assigned.arrive_and_wait();
  const auto period = std::chrono::duration<double>(1.0 / c.steps_per_second);
  const Clock::time_point start = Clock::now();
  // Run first + k sends step `step` at start + period * (step + (first + k) / runs): the runs'
  // phases spread over one period, as with a thread per run, and in this order in time.
  std::vector<v1::MetricBatch> batches(static_cast<size_t>(count));
  for (int k = 0; k < count; ++k) {
    batches[size_t(k)].set_attempt_id(runs[size_t(k)].attempt_id());
    batches[size_t(k)].set_fencing_token(runs[size_t(k)].fencing_token());
  }
  for (int step = 0; step < c.steps(); ++step) {
    for (int k = 0; k < count; ++k) {
      const int i = first + k;
      const double at = step + static_cast<double>(i) / c.runs();
      std::this_thread::sleep_until(start +
                                    std::chrono::duration_cast<Clock::duration>(period * at));
      v1::MetricBatch& batch = batches[size_t(k)];
      batch.set_seq(step + 1);
      *batch.mutable_points() = {};
      *batch.add_points() = BenchPoint(step);
      if (s.times) s.times->Set(i, step, Clock::now());
      worker.SendBatch(batch);
    }
  }
  for (int k = 0; k < count; ++k) EndRun(worker, s, first + k, runs[size_t(k)]);
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
  std::barrier assigned(c.workers, all_assigned);
  std::vector<std::thread> threads;
  for (int w = 0; w < c.workers; ++w) {
    threads.emplace_back(
        [&, w] { PaceWorker(*workers[size_t(w)], s, w * c.slots, c.slots, assigned); });
  }
  for (std::thread& t : threads) t.join();
  // From the pacing's start to the last batch's Ack: what the coordinator kept up with (the
  // RunFinished round trips after it are not batches).
  Clock::time_point last_ack = t0;
  for (auto& w : workers) last_ack = std::max(last_ack, w->LastBatchAck());
  double seconds = std::chrono::duration<double>(last_ack - t0).count();
  for (auto& w : workers) {
    std::vector<double> l = w->TakeLatenciesMs();
    result.latencies_ms.insert(result.latencies_ms.end(), l.begin(), l.end());
    for (Clock::time_point at : w->TakeAckTimes()) {
      result.ack_seconds.push_back(std::chrono::duration<double>(at - t0).count());
    }
    result.cancels += w->cancels();
    if (result.why.empty()) result.why = w->FirstCancel();
    w->Close();
  }
  result.points_per_second =
      seconds > 0 ? static_cast<double>(result.latencies_ms.size()) / seconds : 0;
  result.run_ids = s.run_ids;
  {
    absl::MutexLock lock(&s.mu);
    result.last_finished = s.last_finished;
  }
  Verdict(coord, c, s, &result);
  return result;
}

}  // namespace ablate::bench
