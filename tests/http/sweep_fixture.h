// A stored sweep with real-looking curves, written straight through the Store API: the dashboard
// API tests and bench/dashboard read it back over HTTP. Header-only; needs ablate_store.
#ifndef ABLATE_TESTS_HTTP_SWEEP_FIXTURE_H_
#define ABLATE_TESTS_HTTP_SWEEP_FIXTURE_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/model.h"
#include "server/store/store.h"

namespace ablate::testing {

struct FixtureShape {
  int variants = 2;     // baseline + (variants - 1) ablations
  int seeds = 2;        // runs per variant
  int64_t steps = 300;  // points per finished run
  int64_t val_every = 25;
  int running = 0;          // the last `running` runs stay running (their curves half done)
  int queued = 0;           // the `queued` runs before them never start
  int64_t spike_step = -1;  // every run's train loss jumps to 50 at this step (-1: none)
};

struct FixtureSweep {
  int64_t sweep_id = 0;
  std::vector<Run> runs;          // id order
  std::vector<Attempt> attempts;  // per run; id 0 for queued runs
};

// Train loss of run `r` at step `s`: a decaying curve with a seed-dependent wiggle.
inline double FixtureLoss(int r, int64_t s) {
  return 3.2 + 7.6 * std::exp(-static_cast<double>(s) / 400.0) + 0.05 * std::sin(0.1 * s + r);
}

inline std::vector<MetricPoint> FixturePoints(int r, int64_t first, int64_t count,
                                              const FixtureShape& shape) {
  std::vector<MetricPoint> points;
  for (int64_t s = first; s < first + count; ++s) {
    MetricPoint p;
    p.step = s;
    p.train_loss = s == shape.spike_step ? 50.0 : FixtureLoss(r, s);
    p.lr = s < 100 ? 0.001 * s : 0.1;
    p.step_ms = 100.0 + (s % 7);
    p.train_time_ms = 100.0 * static_cast<double>(s);
    p.tokens = 8192 * s;
    if (s % shape.val_every == 0) p.val_loss = FixtureLoss(r, s) + 0.05;
    points.push_back(p);
  }
  return points;
}

// Appends steps [first, first + count) of run `r` as batch `seq` of attempt `a`.
inline absl::Status AppendFixtureBatch(Store& store, const Run& run, const Attempt& a, int r,
                                       int64_t first, int64_t count, int64_t seq,
                                       const FixtureShape& shape) {
  return store
      .AppendMetrics(run.id, a.id, a.fencing_token, seq, FixturePoints(r, first, count, shape))
      .status();
}

inline absl::Status AppendFixtureCurve(Store& store, const Run& run, const Attempt& a, int r,
                                       int64_t steps, const FixtureShape& shape) {
  constexpr int64_t kBatch = 500;
  for (int64_t first = 0, seq = 0; first < steps; first += kBatch, ++seq) {
    absl::StatusOr<bool> dup =
        store.AppendMetrics(run.id, a.id, a.fencing_token, seq,
                            FixturePoints(r, first, std::min(kBatch, steps - first), shape));
    if (!dup.ok()) return dup.status();
  }
  return absl::OkStatus();
}

inline absl::Status PlayRun(Store& store, const Run& run, int r, int state,
                            const FixtureShape& shape, Attempt* attempt) {
  absl::StatusOr<Attempt> a = store.CreateAttempt(run.id, "fixture-worker");
  if (!a.ok()) return a.status();
  *attempt = *a;
  if (absl::Status s = store.MarkAttemptRunning(a->id, a->fencing_token); !s.ok()) return s;
  int64_t steps = state == 1 ? shape.steps / 2 : shape.steps;
  if (absl::Status s = AppendFixtureCurve(store, run, *a, r, steps, shape); !s.ok()) return s;
  if (state == 1) return absl::OkStatus();
  AttemptResult result;
  result.state = AttemptState::kSucceeded;
  result.stderr_tail = "step " + std::to_string(steps) + " done\n";
  RunSummary summary;
  summary.steps = steps;
  summary.final_val_loss = FixtureLoss(r, steps - 1);
  summary.reached_target = *summary.final_val_loss <= 3.28;
  summary.mean_step_ms = 103;
  summary.train_time_ms = 100.0 * steps;
  result.summary = summary;
  return store.FinishAttempt(a->id, a->fencing_token, result).status();
}

inline Sweep FixtureSweepRow(const std::string& name) {
  Sweep sweep;
  sweep.name = name;
  sweep.spec_yaml = "name: " + name + "\n";
  sweep.baseline_preset = "r20-sub3min";
  sweep.scale = "tiny";
  sweep.dataset = "debian-text";
  sweep.gpus_per_run = 0;
  sweep.tags = {"fixture"};
  return sweep;
}

// Stores the sweep, then plays each run: finished (succeeded) runs first, then `queued` runs that
// never start, then `running` runs with half their curve.
inline absl::StatusOr<FixtureSweep> MakeFixtureSweep(Store& store, const std::string& name,
                                                     const FixtureShape& shape) {
  std::vector<Variant> variants;
  std::vector<Run> runs;
  for (int v = 0; v < shape.variants; ++v) {
    Variant variant;
    variant.index = v;
    variant.name = v == 0 ? "baseline" : "ablation-" + std::to_string(v);
    variant.config_json = "{\"logit_softcap\":" + std::to_string(15 + v) + ",\"seed\":0}";
    variant.config_hash = "hash" + std::to_string(v);
    variant.diff_json =
        v == 0 ? "{}" : "{\"logit_softcap\":{\"from\":15,\"to\":" + std::to_string(15 + v) + "}}";
    variants.push_back(variant);
    for (int seed = 0; seed < shape.seeds; ++seed) {
      Run run;
      run.variant_id = v;
      run.seed = seed;
      runs.push_back(run);
    }
  }
  Worker worker;
  worker.id = "fixture-worker";
  worker.host = "localhost";
  worker.cpu_slots = 2;
  worker.connected = true;
  if (absl::Status s = store.UpsertWorker(worker); !s.ok()) return s;
  absl::StatusOr<int64_t> id = store.CreateSweep(FixtureSweepRow(name), variants, runs);
  if (!id.ok()) return id.status();
  FixtureSweep out;
  out.sweep_id = *id;
  RunFilter filter;
  filter.sweep_id = *id;
  absl::StatusOr<std::vector<Run>> stored = store.ListRuns(filter);
  if (!stored.ok()) return stored.status();
  const int n = static_cast<int>(stored->size());
  for (int r = 0; r < n; ++r) {
    // 0 finished, 1 running, 2 queued
    int state = r >= n - shape.running ? 1 : (r >= n - shape.running - shape.queued ? 2 : 0);
    Attempt attempt;
    if (state != 2) {
      if (absl::Status s = PlayRun(store, (*stored)[r], r, state, shape, &attempt); !s.ok()) {
        return s;
      }
    }
    out.attempts.push_back(attempt);
  }
  stored = store.ListRuns(filter);
  if (!stored.ok()) return stored.status();
  out.runs = *stored;
  return out;
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_HTTP_SWEEP_FIXTURE_H_
