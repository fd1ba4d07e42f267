// Script runs (issue 14), two figures:
//  1. What reading a script's stdout costs the worker: a real child (awk) prints modded-nanogpt
//     lines as fast as it can into a RunSupervisor (pipe, line split, stdout.log, parser, the
//     one-point hold-back) whose points go into a Batcher, as in the worker. The worker's CPU
//     time per line (getrusage of this process: the child's time is not in it) gives its share
//     of one core at 50 lines/s; target < 1%. Ratio: the same child's lines through the
//     ablate-train event path (JSON lines, trainer parser), measured the same way.
//  2. A 1 MB snapshot: SubmitSweep uploading it to a real ablate-coordinator on loopback, then a
//     worker's SnapshotCache fetching it over WorkerService.GetSnapshot, checking its hash and
//     writing it; target < 200 ms together. Ratio: the same submit without a script (a preset).
//
// Every unit timed must succeed (the child started and every line became a point; every submit
// accepted, every fetch done): otherwise the bench prints why, no figures, and exits 1.
//
//   build/bench/script_bench [--lines N] [--repeats R]
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "ablate/v1/client.grpc.pb.h"
#include "ablate/v1/worker.grpc.pb.h"
#include "bench/coordinator/coordinator_process.h"
#include "common/code_snapshot.h"
#include "tests/util/subprocess.h"
#include "worker/batcher.h"
#include "worker/run_supervisor.h"
#include "worker/script_launch.h"

namespace ablate::bench {
namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Runs `awk_program` as a supervised child; returns this process's CPU seconds per line, or -1
// (printed) when the child did not start or fewer points than lines came through.
double SupervisedCpuPerLine(const std::string& dir, const std::string& awk_program, int lines,
                            bool script) {
  worker::RunSpec spec;
  spec.run_dir = dir;
  spec.config_json = "{}";
  spec.argv = {"/usr/bin/awk", awk_program};
  if (script) spec.script = worker::ScriptOutputOptions{worker::LogFormat::kAuto, 3.28};
  spec.trainer_path = spec.argv[0];
  worker::Batcher batcher;
  int64_t points = 0;
  worker::RunCallbacks callbacks{{},
                                 [&](const v1::MetricPoint& p) {
                                   ++points;
                                   auto now = Clock::now().time_since_epoch();
                                   batcher.Add(p, std::chrono::duration_cast<
                                                      std::chrono::milliseconds>(now)
                                                      .count());
                                 },
                                 {}};
  double before = CpuSeconds();
  {
    worker::RunSupervisor supervisor(spec, callbacks);
    if (absl::Status st = supervisor.Start(); !st.ok()) {
      std::fprintf(stderr, "the child did not start: %s\n", st.ToString().c_str());
      return -1;
    }
    supervisor.Wait(std::chrono::minutes(5));
  }
  double cpu = CpuSeconds() - before;
  if (points < lines - 1) {  // the parser holds the last point back until the next line
    std::fprintf(stderr, "only %lld points of %d lines\n", (long long)points, lines);
    return -1;
  }
  return cpu / lines;
}

// False (printed) when a child failed.
bool OutputCost(int lines) {
  testing::TempDir dir;
  const std::string n = std::to_string(lines);
  const std::string nanogpt =
      "BEGIN{for(i=1;i<=" + n +
      ";i++){t=i*130; if(i%125==0) printf \"step:%d/" + n +
      " val_loss:%.4f train_time:%dms step_avg:130.00ms\\n\", i, 4.0-i/1e6, t; "
      "else printf \"step:%d/" + n + " train_loss:%.4f train_time:%dms step_avg:130.00ms\\n\", i, "
      "4.0-i/1e6, t}}";
  const std::string events =
      "BEGIN{for(i=1;i<=" + n +
      ";i++){printf \"{\\\"event\\\":\\\"step\\\",\\\"step\\\":%d,\\\"train_loss\\\":%.4f,"
      "\\\"lr\\\":1.0,\\\"step_ms\\\":130.0,\\\"train_ms\\\":%d,\\\"tokens\\\":%d}\\n\", i, "
      "4.0-i/1e6, i*130, i*524288}}";
  double script = SupervisedCpuPerLine(dir.path() + "/script", nanogpt, lines, true);
  double trainer = SupervisedCpuPerLine(dir.path() + "/trainer", events, lines, false);
  if (script < 0 || trainer < 0) {
    std::fprintf(stderr, "script_bench: a supervised child failed, no figures for stdout cost\n");
    return false;
  }
  std::printf("stdout of a script, %d lines through RunSupervisor + Batcher (worker CPU only):\n",
              lines);
  std::printf("  modded-nanogpt lines (script path):   %.2f us/line\n", script * 1e6);
  std::printf("  ablate-train JSON events (baseline):  %.2f us/line\n", trainer * 1e6);
  std::printf("  ratio script/baseline:                %.2f\n", script / trainer);
  std::printf("  share of one core at 50 lines/s:      %.4f%% (target < 1%%)\n",
              script * 50 * 100);
  return true;
}

std::string Spec(bool with_script) {
  return with_script ? "name: snap\nbaseline: {script: big.py}\ndataset: bench\ngpus_per_run: 0\n"
                     : BenchSweepSpec("plain", 1, 1);
}

// The SubmitSweep's milliseconds; -1 (printed) when it was refused.
double SubmitMs(v1::AblateService::Stub& stub, bool with_script, const std::string& content) {
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(Spec(with_script));
  req.set_file_name("bench.yaml");
  if (with_script) {
    v1::ScriptUpload* u = req.add_scripts();
    u->set_script("big.py");
    v1::SnapshotFile* f = u->add_files();
    f->set_path("big.py");
    f->set_content(content);
  }
  v1::SubmitSweepResponse resp;
  grpc::ClientContext ctx;
  auto t0 = Clock::now();
  grpc::Status s = stub.SubmitSweep(&ctx, req, &resp);
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!s.ok()) {
    std::fprintf(stderr, "submit: %s\n", s.error_message().c_str());
    return -1;
  }
  return ms;
}

// False (printed) when the coordinator did not start or any submit or fetch failed.
bool SnapshotCost(int repeats) {
  CoordinatorProcess coordinator(ABLATE_COORDINATOR_BIN);
  if (!coordinator.ok()) {
    std::fprintf(stderr, "coordinator did not start\n");
    return false;
  }
  auto stub = v1::AblateService::NewStub(coordinator.NewChannel());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto worker_stub = v1::WorkerService::NewStub(
      grpc::CreateCustomChannel(coordinator.target(), grpc::InsecureChannelCredentials(), args));
  std::vector<double> upload, plain, cache;
  std::mt19937 rng(14);
  for (int i = 0; i < repeats; ++i) {
    // A fresh 1 MB script each time (printable, as code is), so every upload is a new snapshot.
    std::string content(1 << 20, ' ');
    for (char& c : content) c = static_cast<char>('a' + rng() % 26);
    for (size_t k = 80; k < content.size(); k += 81) content[k] = '\n';
    upload.push_back(SubmitMs(*stub, true, content));
    plain.push_back(SubmitMs(*stub, false, ""));
    if (upload.back() < 0 || plain.back() < 0) {
      std::fprintf(stderr, "script_bench: a SubmitSweep was refused, no snapshot figures\n");
      return false;
    }
    const std::string hash = SnapshotHash({{"big.py", content, false}});
    testing::TempDir work;
    worker::SnapshotCache snapshots(work.path() + "/snapshots", [&](const std::string& h) {
      grpc::ClientContext ctx;
      v1::GetSnapshotRequest req;
      req.set_hash(h);
      v1::CodeSnapshot resp;
      grpc::Status s = worker_stub->GetSnapshot(&ctx, req, &resp);
      if (!s.ok()) return absl::StatusOr<Snapshot>(absl::InternalError(s.error_message()));
      Snapshot files;
      for (const auto& f : resp.files()) files.push_back({f.path(), f.content(), f.executable()});
      return absl::StatusOr<Snapshot>(files);
    });
    auto t0 = Clock::now();
    bool fetched = false;
    absl::StatusOr<Snapshot> got = snapshots.Get(hash, &fetched);
    cache.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!got.ok() || !fetched) {
      std::fprintf(
          stderr, "script_bench: fetch failed, no snapshot figures: %s\n",
          got.ok() ? "served from the cache, not fetched" : got.status().ToString().c_str());
      return false;
    }
  }
  // What one SHA-256 of the 1 MB costs (the coordinator hashes at submit, the worker at fetch).
  std::vector<double> hashing;
  std::string sample(1 << 20, 'x');
  for (int i = 0; i < repeats; ++i) {
    auto t0 = Clock::now();
    volatile size_t n = SnapshotHash({{"big.py", sample, false}}).size();
    (void)n;
    hashing.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  double up = Percentile(upload, 0.5), base = Percentile(plain, 0.5), c = Percentile(cache, 0.5);
  std::printf("1 MB snapshot on loopback, median of %d:\n", repeats);
  std::printf("  submit with the 1 MB script (upload, hash, store): %.1f ms\n", up);
  std::printf("  submit of a preset spec (baseline):                %.1f ms\n", base);
  std::printf("  ratio upload/baseline:                             %.2f\n", up / base);
  std::printf("  worker fetch + hash check + cache write:           %.1f ms\n", c);
  std::printf("  of which one SHA-256 of 1 MB (in this process):    %.1f ms\n",
              Percentile(hashing, 0.5));
  std::printf("  upload + cached on the worker:                     %.1f ms (target < 200 ms)\n",
              up + c);
  return true;
}

}  // namespace
}  // namespace ablate::bench

int main(int argc, char** argv) {
  int lines = 200000, repeats = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--lines") == 0) lines = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
  }
  if (!ablate::bench::OutputCost(lines)) return 1;
  return ablate::bench::SnapshotCost(repeats) ? 0 : 1;
}
