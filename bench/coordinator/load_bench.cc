// Acknowledgement latency under load: N concurrent runs on simulated workers, each sending one
// step point per MetricBatch at 20 steps/s (paced with sleep_until, phases spread evenly over
// the 50 ms period) into a real ablate-coordinator process. Reports send -> Ack latency
// percentiles and the achieved points/s; the baseline, measured first in the same run, is the
// same measurement with a single run. Target: p99 < 100 ms at 200 runs. More than 1,000 runs go
// in as several sweeps (a spec allows 1,000 seeds): 100 20 drives 2,000 runs. Every run must
// succeed (every batch acknowledged without a Cancel, every run RUN_SUCCEEDED); otherwise the
// bench prints why, no figures, and exits 1. Also printed: the coordinator's threads and memory
// (VmRSS peak per phase, sampled every 50 ms from /proc/PID/status, and VmHWM) and the load
// average at the start and the end, and the N-run phase second by second (Acks that came in
// each second: how many, p99 and max), which tells a tail from a few stalls apart from a
// coordinator falling steadily behind.
// Usage: load_bench [workers] [slots_per_worker] [seconds] [steps_per_second]
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <iostream>
#include <string>
#include <thread>

#include "bench/coordinator/coordinator_process.h"
#include "bench/coordinator/paced_runs.h"
#include "bench/coordinator/proc_sampler.h"

namespace {

using ablate::bench::PacedLoad;
using ablate::bench::PacedResult;
using ablate::bench::Percentile;
using ablate::bench::ProcSampler;
using LoadResult = PacedResult;

// Every run of `c` paced to the end (paced_runs.h); nobody reads the streams.
LoadResult Measure(const ablate::bench::CoordinatorProcess& coord, const PacedLoad& c,
                   const std::string& tag) {
  return ablate::bench::RunPaced(coord, c, tag, /*times=*/nullptr, /*before_pacing=*/{});
}

void Print(const std::string& label, const LoadResult& r) {
  const auto& l = r.latencies_ms;
  std::cout << "  " << label << ": " << l.size() << " batches acknowledged, " << r.points_per_second
            << " points/s; send->Ack p50 " << Percentile(l, 0.5) << " ms, p90 "
            << Percentile(l, 0.9) << " ms, p99 " << Percentile(l, 0.99) << " ms, max "
            << Percentile(l, 1.0) << " ms\n";
}

// The Acks of `r` second by second: count, p99 and max of the latencies that ended then.
void PrintTimeline(const LoadResult& r) {
  std::map<int, std::vector<double>> by_second;
  for (size_t i = 0; i < r.latencies_ms.size() && i < r.ack_seconds.size(); ++i) {
    by_second[std::max(0, static_cast<int>(r.ack_seconds[i]))].push_back(r.latencies_ms[i]);
  }
  std::cout << "  by second of the pacing (Acks, p99 ms, max ms):";
  for (const auto& [second, l] : by_second) {
    std::cout << " [" << second << "s " << l.size() << ", " << static_cast<int>(Percentile(l, 0.99))
              << ", " << static_cast<int>(Percentile(l, 1.0)) << "]";
  }
  std::cout << "\n";
}

// True when `r` succeeded; otherwise prints why on stderr.
bool Succeeded(const std::string& label, const LoadResult& r) {
  if (!r.ok) std::cerr << "load_bench: " << label << " failed, no figures: " << r.why << "\n";
  return r.ok;
}

}  // namespace

int main(int argc, char** argv) {
  PacedLoad c;
  int* fields[] = {&c.workers, &c.slots, &c.seconds, &c.steps_per_second};
  for (int i = 1; i < argc && i <= 4; ++i) *fields[i - 1] = std::atoi(argv[i]);
  ablate::bench::CoordinatorProcess coord(ABLATE_COORDINATOR_BIN);
  if (!coord.ok()) return 1;
  const std::string load_at_start = ablate::bench::LoadAverage();
  ProcSampler sampler(coord.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const ProcSampler::Peaks idle = sampler.Take();
  PacedLoad one = c;
  one.workers = 1;
  one.slots = 1;
  LoadResult base = Measure(coord, one, "load-1");
  const ProcSampler::Peaks at_base = sampler.Take();
  if (!Succeeded("the 1-run baseline", base)) return 1;
  LoadResult full = Measure(coord, c, "load-" + std::to_string(c.runs()));
  const ProcSampler::Peaks at_full = sampler.Take();
  const int64_t hwm_kb = ablate::bench::StatusField(coord.pid(), "VmHWM");
  if (!Succeeded(std::to_string(c.runs()) + " runs", full)) return 1;
  std::cout << "metric batch send->Ack latency, 1 point per batch at " << c.steps_per_second
            << " steps/s per run for " << c.seconds << " s (" << c.workers << " workers x "
            << c.slots << " CPU slots, " << full.sweep_ids.size()
            << " sweeps); every run succeeded, every batch acknowledged without a Cancel:\n";
  Print("1 run  ", base);
  Print(std::to_string(c.runs()) + " runs", full);
  PrintTimeline(full);
  const double offered = c.runs() * c.steps_per_second;
  std::cout << "  offered " << offered << " batches/s with " << c.runs() << " runs; acknowledged "
            << full.points_per_second << "/s from the pacing's start to the last batch's Ack ("
            << 100.0 * full.points_per_second / offered << "% of offered)\n";
  std::cout << "  target (issue 28): >= 98% of offered acknowledged, p99 < 100 ms\n"
            << "  ratio: p99(" << c.runs() << ")/p99(1) = "
            << Percentile(full.latencies_ms, 0.99) / Percentile(base.latencies_ms, 0.99) << "\n";
  std::cout << "coordinator threads (peak) and memory (VmRSS peak): idle " << idle.threads
            << " / " << idle.rss_kb / 1024 << " MiB; 1 run " << at_base.threads << " / "
            << at_base.rss_kb / 1024 << " MiB; " << c.runs() << " runs " << at_full.threads
            << " / " << at_full.rss_kb / 1024 << " MiB; VmHWM " << hwm_kb / 1024
            << " MiB  (target: threads <= 64)\n";
  std::cout << "load average at start: " << load_at_start
            << ", at end: " << ablate::bench::LoadAverage() << "\n";
  return 0;
}
