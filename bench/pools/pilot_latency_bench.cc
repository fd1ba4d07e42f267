// Latency of running inside Slurm pilots (issue 15) on the local Slurm cluster of the tests
// (tests/util/slurm_cluster.h; needs root and Slurm's packages): from submit to the first run's
// start, and from a run's end to the next run's start inside a warm pilot, each against a bare
// worker (started by hand, outside Slurm) on the same machine in the same process. Two tiny
// CPU runs per sweep, one slot, so the second run waits for the first on the same worker.
// Times come from the store (sweep created_ms, runs' started_ms and finished_ms).
// Usage: pilot_latency_bench [repetitions]
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "tests/util/slurm_cluster.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

int64_t Int(const json& j) {
  if (j.is_null()) return 0;
  return j.is_string() ? std::stoll(j.get<std::string>()) : j.get<int64_t>();
}

struct Latency {
  double submit_to_start_ms = 0;
  double end_to_next_start_ms = 0;
};

class Bench {
 public:
  explicit Bench(std::string root) : root_(std::move(root)) {}

  bool Setup(std::string* error) {
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(root_ + "/slurm");
    cluster_ = SlurmCluster::Start(root_ + "/slurm", {}, error);
    if (!cluster_) return false;
    ProcessResult data = RunProcess({"/bin/bash", ABLATE_SOURCE_DIR "/tests/data/make_debian_text.sh",
                                     root_ + "/datasets/debian-text"},
                                    {{"ABLATE_DATA", ABLATE_DATA_BIN}}, 120s);
    if (data.exit_code != 0) *error = data.err;
    WriteFile(root_ + "/pools.yaml",
              "pools:\n  - {name: lab, kind: slurm, partition: gpu, gpus_per_node: 8, "
              "max_nodes: 1, idle_exit: 30s, worker: {binary: " ABLATE_WORKER_BIN ", work_dir: " +
                  root_ + "/pilots, data_dir: " + root_ + "/datasets, cpu_slots: 1}}\n");
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                                 root_, "--port-file", root_ + "/port", "--http", "off",
                                 "--heartbeat-ms", "200", "--pools", root_ + "/pools.yaml",
                                 "--pools-poll-ms", "1000", "--coordinator-id", "bench"},
        root_, cluster_->Env());
    for (int i = 0; i < 500 && !fs::exists(root_ + "/port"); ++i) std::this_thread::sleep_for(20ms);
    std::string port = ReadFile(root_ + "/port");
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
    return data.exit_code == 0;
  }

  void StartBareWorker() {
    bare_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_WORKER_BIN, "--coordinator", address_, "--work-dir",
                                 root_ + "/bare", "--data-dir", root_ + "/datasets",
                                 "--cpu-slots", "1", "--gpus", "none", "--name", "bare"},
        root_);
  }

  // Submits a two-run sweep (on the pool or not) and waits for both runs; nullopt (with *error)
  // when they did not both end RUN_SUCCEEDED within 300 s: no latency is taken from such runs.
  std::optional<Latency> Measure(const std::string& name, bool pool, std::string* error) {
    WriteFile(root_ + "/spec.yaml",
              "name: " + name +
                  "\nbaseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: 10, "
                  "val_every: 5, val_tokens: 4096}}\nseeds: 2\ngpus_per_run: 0\n"
                  "dataset: debian-text\n" + (pool ? "pool: lab\n" : ""));
    json sweep = Json({"submit", root_ + "/spec.yaml"});
    const std::string id = std::to_string(Int(sweep["sweep"]["id"]));
    const int64_t created = Int(sweep["sweep"]["created_ms"]);
    json runs;
    int done = 0;
    for (int i = 0; i < 3000; ++i) {
      runs = Json({"runs", "--sweep", id});
      done = 0;
      const json list = runs.is_object() ? runs.value("runs", json::array()) : json::array();
      for (const json& r : list) done += r.value("state", std::string()) == "RUN_SUCCEEDED";
      if (done == 2) break;
      std::this_thread::sleep_for(100ms);
    }
    if (done != 2) {
      *error = "sweep " + name + ": " + std::to_string(done) +
               " of 2 runs succeeded within 300 s; runs: " + runs.dump();
      return std::nullopt;
    }
    std::vector<std::pair<int64_t, int64_t>> spans;  // started, finished
    for (const json& r : runs["runs"]) spans.push_back({Int(r["started_ms"]), Int(r["finished_ms"])});
    std::sort(spans.begin(), spans.end());
    return Latency{double(spans[0].first - created), double(spans[1].first - spans[0].second)};
  }

  ~Bench() {
    if (bare_) bare_->Signal(SIGTERM), bare_->Wait(10s);
    if (coordinator_) coordinator_->Signal(SIGTERM), coordinator_->Wait(10s);
    if (cluster_) cluster_->Stop();
  }

 private:
  json Json(std::vector<std::string> args) {
    args.insert(args.begin(), {ABLATE_CLI_BIN, "--server", address_, "--json"});
    ProcessResult r = RunProcess(args);
    return json::parse(r.out, nullptr, false);
  }

  std::string root_, address_;
  std::unique_ptr<SlurmCluster> cluster_;
  std::unique_ptr<Subprocess> coordinator_, bare_;
};

}  // namespace
}  // namespace ablate::testing

int main(int argc, char** argv) {
  using namespace ablate::testing;
  if (std::string why = SlurmCluster::UnavailableReason(); !why.empty()) {
    std::fprintf(stderr, "pilot_latency_bench: no local Slurm: %s\n", why.c_str());
    return 1;
  }
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  TempDir dir;
  Bench bench(dir.path());
  std::string error;
  if (!bench.Setup(&error)) {
    std::fprintf(stderr, "pilot_latency_bench: %s\n", error.c_str());
    return 1;
  }
  // Pilots first, while no bare worker exists (pool sweeps never run on it anyway). The first
  // repetition starts cold (no pilot yet); later ones may find the previous pilot still warm
  // (idle_exit 30 s), so the median mixes both: the per-repetition lines say which is which.
  std::vector<double> pilot_start, pilot_gap, bare_start, bare_gap;
  for (int i = 0; i < reps; ++i) {
    std::optional<Latency> got = bench.Measure("pilot-" + std::to_string(i), true, &error);
    if (!got) {
      std::fprintf(stderr, "pilot_latency_bench: no figures: %s\n", error.c_str());
      return 1;
    }
    const Latency& pilot = *got;
    std::printf("pilot %d: submit -> first start %7.0f ms, end -> next start (warm) %6.0f ms\n",
                i, pilot.submit_to_start_ms, pilot.end_to_next_start_ms);
    pilot_start.push_back(pilot.submit_to_start_ms);
    pilot_gap.push_back(pilot.end_to_next_start_ms);
  }
  bench.StartBareWorker();
  for (int i = 0; i < reps; ++i) {
    std::optional<Latency> got = bench.Measure("bare-" + std::to_string(i), false, &error);
    if (!got) {
      std::fprintf(stderr, "pilot_latency_bench: no figures: %s\n", error.c_str());
      return 1;
    }
    const Latency& bare = *got;
    std::printf("bare  %d: submit -> first start %7.0f ms, end -> next start        %6.0f ms\n",
                i, bare.submit_to_start_ms, bare.end_to_next_start_ms);
    bare_start.push_back(bare.submit_to_start_ms);
    bare_gap.push_back(bare.end_to_next_start_ms);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("median submit -> first start: pilot %.0f ms, bare worker %.0f ms, ratio %.1f\n",
              median(pilot_start), median(bare_start), median(pilot_start) / median(bare_start));
  std::printf("median end -> next start:     pilot %.0f ms, bare worker %.0f ms, ratio %.2f\n",
              median(pilot_gap), median(bare_gap), median(pilot_gap) / median(bare_gap));
  return 0;
}
