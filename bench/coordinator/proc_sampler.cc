// ProcSampler: /proc/PID/status fields, sampled.
#include "bench/coordinator/proc_sampler.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <utility>

namespace ablate::bench {

int64_t StatusField(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

ProcSampler::ProcSampler(int pid) : pid_(pid), thread_([this] { Loop(); }) {}

ProcSampler::~ProcSampler() {
  stop_ = true;
  thread_.join();
}

ProcSampler::Peaks ProcSampler::Take() {
  absl::MutexLock lock(&mu_);
  return std::exchange(peaks_, {});
}

void ProcSampler::Loop() {
  while (!stop_) {
    const int64_t rss = StatusField(pid_, "VmRSS"), threads = StatusField(pid_, "Threads");
    {
      absl::MutexLock lock(&mu_);
      peaks_.rss_kb = std::max(peaks_.rss_kb, rss);
      peaks_.threads = std::max(peaks_.threads, threads);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace ablate::bench
