// The coordinator child's memory and threads, as the coordinator benches report them: fields of
// /proc/PID/status, sampled every 50 ms (peaks per phase), and the machine's load average.
#ifndef ABLATE_BENCH_COORDINATOR_PROC_SAMPLER_H_
#define ABLATE_BENCH_COORDINATOR_PROC_SAMPLER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ablate::bench {

// A /proc/PID/status field in kB (VmRSS, VmHWM) or count (Threads); -1 when unreadable.
int64_t StatusField(int pid, const std::string& field);

// /proc/loadavg's 1, 5 and 15 minute load averages ("1.94 0.77 1.24").
std::string LoadAverage();

// Samples `pid`'s VmRSS and Threads every 50 ms on its own thread; Take() returns the peaks
// since the previous Take. Thread-safe.
class ProcSampler {
 public:
  struct Peaks {
    int64_t rss_kb = 0;
    int64_t threads = 0;
  };
  explicit ProcSampler(int pid);
  ~ProcSampler();
  ProcSampler(const ProcSampler&) = delete;
  ProcSampler& operator=(const ProcSampler&) = delete;
  Peaks Take();

 private:
  void Loop();
  const int pid_;
  absl::Mutex mu_;
  Peaks peaks_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace ablate::bench

#endif  // ABLATE_BENCH_COORDINATOR_PROC_SAMPLER_H_
