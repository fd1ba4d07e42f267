// The coordinator under readers (issue 19, deliverable 6): runs reporting at a fixed step rate
// (paced_runs.h; default 200 runs x 20 steps/s), once alone and once while dashboard pages hold
// live-update streams open (default 500: 100 sweep pages, 400 run pages) and `ablate watch`-style
// WatchSweep streams follow the sweep (default 200). Same coordinator process, the alone phase
// first, so the ratio of the two ingest latencies is what the readers cost the writers.
// Reports, from a real ablate-coordinator child:
//   - ingest latency: MetricBatch send -> Ack p50/p90/p99/max, and the ratio loaded / alone;
//   - the coordinator's RSS (VmRSS sampled every 50 ms from /proc/PID/status; peak per phase,
//     and VmHWM) and its thread count;
//   - whether the streams kept up: live pages, how long after a batch was sent its step reached
//     the page (p50/p99/max), and how many pages received the final step of every run they
//     show; watchers, how long after the last run finished their stream said so and ended.
// Usage: watch_load_bench [workers=20] [slots/worker=10] [seconds=10] [steps/s=20]
//                         [live pages=500] [of which sweep pages=100] [watchers=200]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/coordinator/coordinator_process.h"
#include "bench/coordinator/paced_runs.h"
#include "bench/coordinator/sse_clients.h"

namespace {

using ablate::bench::Clock;
using ablate::bench::Percentile;

struct Config {
  ablate::bench::PacedLoad load;
  int pages = 500;
  int sweep_pages = 100;
  int watchers = 200;
};

// A /proc/PID/status field in kB (VmRSS, VmHWM) or count (Threads); -1 when unreadable.
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

// Samples the coordinator's VmRSS and Threads every 50 ms; the peaks since the last Take.
class ProcSampler {
 public:
  explicit ProcSampler(int pid) : pid_(pid), thread_([this] { Loop(); }) {}
  ~ProcSampler() {
    stop_ = true;
    thread_.join();
  }
  struct Peaks {
    int64_t rss_kb = 0;
    int64_t threads = 0;
  };
  Peaks Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(peaks_, {});
  }

 private:
  void Loop() {
    while (!stop_) {
      int64_t rss = StatusField(pid_, "VmRSS"), threads = StatusField(pid_, "Threads");
      {
        std::lock_guard<std::mutex> lock(mu_);
        peaks_.rss_kb = std::max(peaks_.rss_kb, rss);
        peaks_.threads = std::max(peaks_.threads, threads);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  const int pid_;
  std::mutex mu_;
  Peaks peaks_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// `ablate watch`: one WatchSweep stream on its own connection, read until the server ends it.
struct Watcher {
  std::unique_ptr<grpc::ClientContext> ctx = std::make_unique<grpc::ClientContext>();
  std::atomic<int64_t> updates{0};
  std::atomic<bool> ended{false};
  Clock::time_point ended_at;
  grpc::Status status;
  std::thread thread;
};

void Watch(const ablate::bench::CoordinatorProcess& coord, int64_t sweep_id, Watcher& w) {
  auto stub = ablate::v1::AblateService::NewStub(coord.NewChannel());
  ablate::v1::WatchSweepRequest req;
  req.set_id(sweep_id);
  auto reader = stub->WatchSweep(w.ctx.get(), req);
  ablate::v1::SweepUpdate update;
  while (reader->Read(&update)) ++w.updates;
  w.status = reader->Finish();
  w.ended_at = Clock::now();
  w.ended = true;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A progress line on stderr, with seconds since the start.
void Progress(const std::string& what) {
  static const Clock::time_point start = Clock::now();
  std::cerr << "[" << Ms(Clock::now() - start) / 1000 << " s] " << what << std::endl;
}

void PrintIngest(const std::string& label, const ablate::bench::PacedResult& r) {
  const auto& l = r.latencies_ms;
  std::cout << "  " << label << ": " << l.size() << " batches acknowledged, " << r.points_per_second
            << " points/s; send->Ack p50 " << Percentile(l, 0.5) << " ms, p90 "
            << Percentile(l, 0.9) << " ms, p99 " << Percentile(l, 0.99) << " ms, max "
            << Percentile(l, 1.0) << " ms\n";
}

// True when `r` succeeded; otherwise prints why on stderr.
bool Succeeded(const std::string& label, const ablate::bench::PacedResult& r) {
  if (!r.ok) std::cerr << "watch_load_bench: " << label << " failed, no figures: " << r.why << "\n";
  return r.ok;
}

// The runs a page shows: a sweep page (/api/live/sweeps/<id>?...) its sweep's, a run page 1.
int RunsShown(const std::string& path, const std::map<int64_t, int>& runs_of_sweep) {
  const std::string prefix = "/api/live/sweeps/";
  if (path.rfind(prefix, 0) != 0) return 1;
  auto it = runs_of_sweep.find(std::stoll(path.substr(prefix.size())));
  return it == runs_of_sweep.end() ? 0 : it->second;
}

void PrintPages(const std::string& label, const std::vector<ablate::bench::SseClientStats>& all,
                bool sweep_pages, const std::map<int64_t, int>& runs_of_sweep, int steps) {
  std::vector<double> lags;
  int n = 0, ok = 0, ready = 0, complete = 0, refused = 0;
  int64_t bytes = 0, messages = 0;
  for (const auto& s : all) {
    if ((s.path.find("/api/live/sweeps/") == 0) != sweep_pages) continue;
    ++n;
    ok += s.status == 200;
    refused += s.status == 503;
    ready += s.ready;
    bytes += s.bytes;
    messages += s.messages;
    lags.insert(lags.end(), s.lag_ms.begin(), s.lag_ms.end());
    int full = 0;
    for (const auto& [run, step] : s.last_step) full += step == steps - 1;
    complete += full == RunsShown(s.path, runs_of_sweep);
  }
  if (n == 0) return;
  std::cout << "  " << label << ": " << n << " opened, " << ok << " answered 200, " << refused
            << " answered 503, " << ready << " ready; " << messages << " messages, "
            << bytes / 1024 << " KiB; batch sent -> step on the page p50 " << Percentile(lags, 0.5)
            << " ms, p99 " << Percentile(lags, 0.99) << " ms, max " << Percentile(lags, 1.0)
            << " ms; " << complete << "/" << n << " got the final step of every run shown\n";
}

// The readers put on top of the paced runs: live dashboard pages and WatchSweep streams.
struct Readers {
  Readers(const Config& config, ablate::bench::CoordinatorProcess& coordinator,
          ablate::bench::SendTimes& send_times)
      : c(config), coord(coordinator), times(send_times) {}

  const Config& c;
  ablate::bench::CoordinatorProcess& coord;
  ablate::bench::SendTimes& times;
  std::unique_ptr<ablate::bench::SseClients> pages;
  std::vector<std::unique_ptr<Watcher>> watchers;
  Clock::time_point ready_at;
  bool pages_ready = false;

  // Opens the pages, then the watchers, waiting up to 60 s for each kind to be reading.
  void Attach(const std::vector<int64_t>& sweep_ids, const std::vector<int64_t>& run_ids) {
    std::vector<std::string> paths;
    for (int i = 0; i < c.pages; ++i) {
      paths.push_back(
          i < c.sweep_pages
              ? "/api/live/sweeps/" + std::to_string(sweep_ids[size_t(i) % sweep_ids.size()]) +
                    "?series=train_loss,val_loss"
              : "/api/live/runs/" + std::to_string(run_ids[size_t(i) % run_ids.size()]));
    }
    Progress("phase 2: every run started; opening " + std::to_string(paths.size()) +
             " live pages");
    pages = std::make_unique<ablate::bench::SseClients>(coord.http_port(), &times);
    if (!pages->Open(paths)) return;
    pages_ready = pages->WaitReady(std::chrono::seconds(60));
    Progress(std::string(pages_ready ? "every page ready" : "NOT every page ready after 60 s") +
             "; opening " + std::to_string(c.watchers) + " WatchSweep streams");
    for (int i = 0; i < c.watchers; ++i) {
      watchers.push_back(std::make_unique<Watcher>());
      Watcher& w = *watchers.back();
      int64_t sweep_id = sweep_ids[size_t(i) % sweep_ids.size()];
      w.thread = std::thread([this, sweep_id, &w] { Watch(coord, sweep_id, w); });
    }
    WaitUntil([](const Watcher& w) { return w.updates > 0 || w.ended; });
    ready_at = Clock::now();
    Progress("readers attached; pacing the runs");
  }

  // Waits up to 60 s for every watcher to end (they end when their sweep has finished), then
  // 2 s for the pages' last points.
  void WaitForEnd() {
    WaitUntil([](const Watcher& w) { return w.ended.load(); });
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }

  // Cancels the watchers still open, joins them and closes the pages.
  void Stop() {
    for (auto& w : watchers) {
      if (!w->ended) w->ctx->TryCancel();
      w->thread.join();
    }
    if (pages) pages->Stop();
  }

 private:
  template <typename Done>
  void WaitUntil(Done done) {
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline && !std::all_of(watchers.begin(), watchers.end(),
                                                   [&](const auto& w) { return done(*w); })) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
};

void PrintWatchers(const std::vector<std::unique_ptr<Watcher>>& watchers,
                   Clock::time_point last_finished) {
  std::vector<double> end_lag;
  int ok = 0;
  int64_t updates = 0;
  for (const auto& w : watchers) {
    updates += w->updates;
    if (w->ended && w->status.ok()) {
      ++ok;
      end_lag.push_back(Ms(w->ended_at - last_finished));
    }
  }
  std::cout << "  watchers: " << watchers.size() << " opened, " << ok
            << " ended OK when the sweep finished; " << updates
            << " updates; last run finished -> stream ended p50 " << Percentile(end_lag, 0.5)
            << " ms, p99 " << Percentile(end_lag, 0.99) << " ms, max " << Percentile(end_lag, 1.0)
            << " ms\n";
}

// What the coordinator held: peaks of each phase.
struct Peaks {
  ProcSampler::Peaks idle, alone, loaded;
  int64_t hwm_kb = 0;
};

void PrintReport(const Config& c, const ablate::bench::PacedResult& alone,
                 const ablate::bench::PacedResult& loaded, const Peaks& peaks,
                 const Readers& readers, Clock::time_point t_attach) {
  std::map<int64_t, int> runs_of_sweep;
  std::vector<int> sizes = ablate::bench::SweepSizes(c.load.runs());
  for (size_t k = 0; k < loaded.sweep_ids.size(); ++k)
    runs_of_sweep[loaded.sweep_ids[k]] = sizes[k];
  std::cout << c.load.runs() << " runs (" << c.load.workers << " workers x " << c.load.slots
            << " CPU slots), 1 point per MetricBatch at " << c.load.steps_per_second
            << " steps/s per run for " << c.load.seconds << " s, " << loaded.sweep_ids.size()
            << " sweeps, every run succeeded; readers: " << c.pages << " live pages ("
            << c.sweep_pages << " sweep pages, " << c.pages - c.sweep_pages << " run pages), "
            << c.watchers << " WatchSweep streams\n";
  std::cout << "ingest (MetricBatch send -> Ack):\n";
  PrintIngest("alone       ", alone);
  PrintIngest("with readers", loaded);
  std::cout << "  ratio p99(with readers)/p99(alone) = "
            << Percentile(loaded.latencies_ms, 0.99) / Percentile(alone.latencies_ms, 0.99)
            << ", p50 ratio = "
            << Percentile(loaded.latencies_ms, 0.5) / Percentile(alone.latencies_ms, 0.5)
            << "  (target: p99 < 100 ms)\n";
  std::cout << "coordinator memory (VmRSS peak) and threads: idle " << peaks.idle.rss_kb / 1024
            << " MiB / " << peaks.idle.threads << " threads; alone " << peaks.alone.rss_kb / 1024
            << " MiB / " << peaks.alone.threads << "; with readers "
            << peaks.loaded.rss_kb / 1024 << " MiB / " << peaks.loaded.threads << "; VmHWM "
            << peaks.hwm_kb / 1024 << " MiB\n";
  std::cout << "readers attached in " << Ms(readers.ready_at - t_attach) / 1000
            << " s (from submit; "
            << (readers.pages_ready ? "every page ready" : "NOT every page ready") << ")\n";
  if (readers.pages) {
    PrintPages("sweep pages", readers.pages->stats(), true, runs_of_sweep, c.load.steps());
    PrintPages("run pages  ", readers.pages->stats(), false, runs_of_sweep, c.load.steps());
  }
  PrintWatchers(readers.watchers, loaded.last_finished);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  int* fields[] = {&c.load.workers, &c.load.slots,       &c.load.seconds, &c.load.steps_per_second,
                   &c.pages,        &c.sweep_pages,      &c.watchers};
  for (int i = 1; i < argc && i <= 7; ++i) *fields[i - 1] = std::atoi(argv[i]);
  c.sweep_pages = std::min(c.sweep_pages, c.pages);
  ablate::bench::CoordinatorProcess coord(
      ABLATE_COORDINATOR_BIN,
      {.http = true,
       .extra_args = {"--http-max-live-streams", std::to_string(c.pages + 16),
                      // every page comes from this one loopback address
                      "--http-max-connections-per-address", std::to_string(c.pages + 64)}});
  if (!coord.ok()) return 1;
  const int pid = coord.pid();
  std::cout << "load average at start: " << LoadAverage() << "\n";
  ProcSampler sampler(pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Peaks peaks;
  peaks.idle = sampler.Take();

  Progress("phase 1: runs alone");
  ablate::bench::PacedResult alone = ablate::bench::RunPaced(coord, c.load, "alone", nullptr, {});
  peaks.alone = sampler.Take();

  ablate::bench::SendTimes times(c.load.runs(), c.load.steps());
  Readers readers(c, coord, times);
  auto attach = [&](const std::vector<int64_t>& sweep_ids, const std::vector<int64_t>& run_ids) {
    readers.Attach(sweep_ids, run_ids);
  };
  Clock::time_point t_attach = Clock::now();
  ablate::bench::PacedResult loaded = ablate::bench::RunPaced(coord, c.load, "loaded", &times, attach);
  Progress("runs finished; waiting for the watchers to end");
  readers.WaitForEnd();
  peaks.loaded = sampler.Take();
  peaks.hwm_kb = StatusField(pid, "VmHWM");
  readers.Stop();
  if (!Succeeded("runs alone", alone) || !Succeeded("runs with readers", loaded)) return 1;
  PrintReport(c, alone, loaded, peaks, readers, t_attach);
  std::cout << "load average at end: " << LoadAverage() << "\n";
  return 0;
}
