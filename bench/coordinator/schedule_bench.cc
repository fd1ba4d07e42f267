// Scheduling latency: from the SubmitSweep call to the Assignment arriving on an idle worker's
// stream, for a 1-run CPU sweep, into a real ablate-coordinator process. The worker is
// simulated, so "trainer child started" is the Assignment's arrival (a real worker forks the
// trainer right after it). Baseline measured in the same run: a unary RPC round trip
// (ListPresets) on the same channel.
// Usage: schedule_bench [repetitions]
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench/coordinator/coordinator_process.h"
#include "bench/coordinator/sim_worker.h"

namespace {

using ablate::bench::Clock;
using ablate::bench::Percentile;

double MsSince(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

std::vector<double> UnaryRoundTripsMs(ablate::v1::AblateService::Stub& stub, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    ablate::v1::ListPresetsResponse resp;
    grpc::ClientContext ctx;
    Clock::time_point t0 = Clock::now();
    grpc::Status s = stub.ListPresets(&ctx, ablate::v1::ListPresetsRequest(), &resp);
    if (!s.ok()) std::cerr << "ListPresets: " << s.error_message() << "\n";
    out.push_back(MsSince(t0, Clock::now()));
  }
  return out;
}

struct Sample {
  double submit_ms = 0;  // the SubmitSweep RPC alone
  double assign_ms = 0;  // SubmitSweep call start -> Assignment on the worker stream
};

// One 1-run sweep; the run is finished before returning so the worker is idle again.
bool ScheduleOnce(ablate::v1::AblateService::Stub& stub, ablate::bench::SimWorker& worker,
                  int rep, Sample* sample) {
  Clock::time_point t0 = Clock::now();
  auto resp = ablate::bench::SubmitSweep(
      stub, ablate::bench::BenchSweepSpec("sched-" + std::to_string(rep), 1, 1));
  Clock::time_point submitted = Clock::now();
  if (!resp) return false;
  auto got = worker.NextAssignment(std::chrono::seconds(10));
  if (!got) {
    std::cerr << "no Assignment within 10 s\n";
    return false;
  }
  sample->submit_ms = MsSince(t0, submitted);
  sample->assign_ms = MsSince(t0, got->arrived);
  worker.SendRunStarted(got->assignment);
  if (!worker.Finish(got->assignment, 0, std::chrono::seconds(10))) {
    std::cerr << "RunFinished not acknowledged within 10 s\n";
    return false;
  }
  return true;
}

void Report(const std::vector<Sample>& samples, const std::vector<double>& unary) {
  std::vector<double> assign, submit;
  for (const Sample& s : samples) {
    assign.push_back(s.assign_ms);
    submit.push_back(s.submit_ms);
  }
  double med = Percentile(assign, 0.5), rtt = Percentile(unary, 0.5);
  std::cout << "submit -> Assignment on an idle simulated worker (stands in for the trainer "
               "fork), 1-run sweep, "
            << samples.size() << " sweeps:\n"
            << "  median " << med << " ms, p90 " << Percentile(assign, 0.9) << " ms, max "
            << Percentile(assign, 1.0) << " ms  (target < 200 ms)\n"
            << "  of which the SubmitSweep RPC: median " << Percentile(submit, 0.5) << " ms\n"
            << "  unary RPC round trip (ListPresets): median " << rtt << " ms, p90 "
            << Percentile(unary, 0.9) << " ms\n"
            << "  ratio: scheduling median = " << med / rtt << "x a unary round trip\n";
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  ablate::bench::CoordinatorProcess coord(ABLATE_COORDINATOR_BIN);
  if (!coord.ok()) return 1;
  auto stub = ablate::v1::AblateService::NewStub(coord.NewChannel());
  ablate::bench::SimWorker worker(coord.NewChannel(), "sched-worker", 1);
  if (!worker.Connect()) return 1;
  UnaryRoundTripsMs(*stub, 20);  // warm-up: connection, server threads
  Sample warm;
  if (!ScheduleOnce(*stub, worker, -1, &warm)) return 1;
  std::vector<Sample> samples(reps);
  for (int r = 0; r < reps; ++r) {
    if (!ScheduleOnce(*stub, worker, r, &samples[r])) return 1;
  }
  std::vector<double> unary = UnaryRoundTripsMs(*stub, 200);
  worker.Close();
  // Every scheduled run (the warm-up's too) must have ended succeeded, with no Cancel.
  absl::Status runs = ablate::bench::CheckRunsSucceeded(*stub, /*sweep_id=*/0, reps + 1);
  if (worker.cancels() > 0 || !runs.ok()) {
    std::cerr << "schedule_bench: runs failed, no figures: "
              << (worker.cancels() > 0 ? worker.FirstCancel() : runs.ToString()) << "\n";
    return 1;
  }
  Report(samples, unary);
  return 0;
}
