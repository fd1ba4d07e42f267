// Latency of the compare / records / export views (server/compare/compare_queries.h) on a store with
// a 50-run x 3000-step sweep (5 variants x 10 seeds, all succeeded), each against the store reads
// it is built from, measured in the same run: what the statistics, the preset hashing and the
// message building add on top of SQLite. Prints medians in ms and the ratios.
//
// Usage: compare_bench [--reps N] [--steps N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "server/compare/compare_queries.h"
#include "server/store/store.h"
#include "server/sweep/sweep_spec.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"

namespace ablate {
namespace {

constexpr const char* kSpec = R"(name: bench
baseline: {preset: r20-sub3min, scale: full}
seeds: 10
gpus_per_run: 8
ablations:
  - {name: softcap-30, set: {logit_softcap: 30, softcap_kind: tanh}}
  - {name: no-momentum-warmup, set: {muon.momentum_warmup_steps: 0}}
  - {name: no-unet, set: {unet_skips: false}}
  - {name: default-attn-scale, set: {attn_scale: 0}}
)";

void Check(const absl::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, std::string(s.message()).c_str());
  std::exit(1);
}

std::vector<MetricPoint> Curve(int steps, int seed) {
  std::vector<MetricPoint> points;
  double time = 0;
  for (int step = 1; step <= steps; ++step) {
    MetricPoint p;
    p.step = step;
    p.train_loss = 3.28 + 7.0 * std::exp(-step / 300.0) + 1e-4 * seed;
    if (step % 125 == 0 || step == steps) p.val_loss = *p.train_loss + 0.01;
    p.lr = 0.05;
    p.step_ms = 129.0 + 0.01 * (step % 7);
    time += *p.step_ms;
    p.train_time_ms = time;
    p.tokens = int64_t{524288} * step;
    points.push_back(p);
  }
  return points;
}

void RunOne(Store& store, const Run& run, int steps) {
  absl::StatusOr<Attempt> a = store.CreateAttempt(run.id, "node");
  Check(a.status(), "attempt");
  Check(store.MarkAttemptRunning(a->id, a->fencing_token), "running");
  const std::vector<MetricPoint> curve = Curve(steps, run.seed);
  constexpr size_t kBatch = 500;
  for (size_t i = 0; i < curve.size(); i += kBatch) {
    std::vector<MetricPoint> batch(curve.begin() + i,
                                   curve.begin() + std::min(curve.size(), i + kBatch));
    Check(store.AppendMetrics(run.id, a->id, a->fencing_token, i / kBatch, batch).status(),
          "metrics");
  }
  AttemptResult result;
  RunSummary& s = result.summary.emplace();
  s.final_val_loss = 3.279 + 1e-4 * (run.seed % 5) + 1e-3 * (run.variant_id % 3);
  s.reached_target = run.seed % 4 != 3;
  if (s.reached_target) s.time_to_target_ms = 180000 + 300.0 * run.seed + 500.0 * run.variant_id;
  s.steps = steps;
  s.mean_step_ms = 129.0 + 0.1 * run.variant_id;
  Check(store.FinishAttempt(a->id, a->fencing_token, result).status(), "finish");
}

int64_t Fill(Store& store, int steps) {
  Worker w;
  w.id = "node";
  for (int i = 0; i < 8; ++i) w.gpus.push_back({i, "NVIDIA H100 80GB HBM3", 81559});
  Check(store.UpsertWorker(w), "worker");
  absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(kSpec, "bench.yaml");
  Check(e.status(), "spec");
  absl::StatusOr<int64_t> id = store.CreateSweep(e->sweep, e->variants, e->runs);
  Check(id.status(), "sweep");
  RunFilter filter;
  filter.sweep_id = *id;
  const std::vector<Run> runs = store.ListRuns(filter).value();
  for (const Run& run : runs) RunOne(store, run, steps);
  return *id;
}

double MedianMs(int reps, const std::function<void()>& fn) {
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                           start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void Report(const char* what, double ms, const char* baseline, double base_ms) {
  std::printf("%-34s %9.3f ms   %-40s %9.3f ms   ratio %.2f\n", what, ms, baseline, base_ms,
              ms / base_ms);
}

void Bench(Store& store, int64_t sweep, int reps) {
  RunFilter filter;
  filter.sweep_id = sweep;
  const double reads = MedianMs(reps, [&] {
    Check(store.ListVariants(sweep).status(), "variants");
    Check(store.ListRuns(filter).status(), "runs");
  });
  const double compare =
      MedianMs(reps, [&] { Check(BuildSweepComparison(store, sweep).status(), "compare"); });
  Report("BuildSweepComparison", compare, "ListVariants + ListRuns", reads);

  std::vector<std::string> hashes;
  for (const Preset& p : AllPresets()) {
    for (Scale s : {Scale::kFull, Scale::kSmall, Scale::kTiny}) {
      hashes.push_back(ConfigHash(*PresetConfig(p.name, s)));
    }
  }
  const double record_reads = MedianMs(reps, [&] {
    Check(store.ListRecords().status(), "records");
    Check(store.ListSucceededRunsByConfigHash(hashes).status(), "own runs");
  });
  const double records =
      MedianMs(reps, [&] { Check(BuildRecordsTable(store).status(), "records table"); });
  Report("BuildRecordsTable", records, "ListRecords + runs by hash (hashes known)", record_reads);

  const std::vector<Run> runs = store.ListRuns(filter).value();
  const double point_reads = MedianMs(reps, [&] {
    for (const Run& r : runs) {
      Check(store.ListMetricPoints(r.id, std::numeric_limits<int64_t>::min(), 0).status(), "pts");
    }
  });
  size_t bytes = 0;
  const double exported = MedianMs(reps, [&] {
    bytes = 0;
    Check(ExportSweepRuns(store, sweep,
                          [&](const v1::ExportedRun& run) {
                            bytes += run.ByteSizeLong();
                            return true;
                          }),
          "export");
  });
  Report("ExportSweepRuns (messages sized)", exported, "ListMetricPoints of every run", point_reads);
  std::printf("export: %zu runs, %.1f MB of protobuf\n", runs.size(), bytes / 1e6);
}

}  // namespace
}  // namespace ablate

int main(int argc, char** argv) {
  int reps = 21, steps = 3000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--reps") reps = std::atoi(argv[i + 1]);
    if (flag == "--steps") steps = std::atoi(argv[i + 1]);
  }
  char dir_template[] = "/tmp/compare-bench-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  {
    absl::StatusOr<std::unique_ptr<ablate::Store>> store = ablate::Store::Open(dir + "/bench.db");
    ablate::Check(store.status(), "open");
    const auto start = std::chrono::steady_clock::now();
    const int64_t sweep = ablate::Fill(**store, steps);
    std::printf("filled 50 runs x %d steps in %.1f s; median of %d repetitions:\n", steps,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                reps);
    ablate::Bench(**store, sweep, reps);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
