// Baseline spread from stored runs, then the power calculation; see plan_queries.h.
#include "server/compare/plan_queries.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/plan_power.h"
#include "common/stats/sample_stats.h"
#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

// What the plan needs of the sweep: its baseline config hash, variant count and GPUs per run.
struct PlanTarget {
  std::string baseline_hash;
  int variants = 0;
  int gpus_per_run = 0;
};

absl::StatusOr<PlanTarget> FromVariants(const std::vector<Variant>& variants, int gpus_per_run) {
  for (const Variant& v : variants) {
    if (v.name == "baseline") {
      return PlanTarget{v.config_hash, static_cast<int>(variants.size()), gpus_per_run};
    }
  }
  return absl::FailedPreconditionError(
      "the sweep has no baseline (include_baseline: false): there is nothing to compare with");
}

absl::StatusOr<PlanTarget> LoadTarget(const Store& store, const v1::PlanSweepRequest& req) {
  if ((req.sweep_id() > 0) == !req.spec_yaml().empty()) {
    return absl::InvalidArgumentError("give either a sweep id or a spec, not both or neither");
  }
  if (req.sweep_id() > 0) {
    absl::StatusOr<Sweep> sweep = store.GetSweep(req.sweep_id());
    if (!sweep.ok()) return sweep.status();
    absl::StatusOr<std::vector<Variant>> variants = store.ListVariants(req.sweep_id());
    if (!variants.ok()) return variants.status();
    return FromVariants(*variants, sweep->gpus_per_run);
  }
  absl::StatusOr<ExpandedSweep> expanded = ParseSweepSpec(
      req.spec_yaml(), req.file_name().empty() ? "<spec>" : req.file_name());
  if (!expanded.ok()) return expanded.status();
  return FromVariants(expanded->variants, expanded->sweep.gpus_per_run);
}

std::string Percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", 100 * x);
  return buf;
}

}  // namespace

absl::StatusOr<v1::PlanSweepResponse> BuildSweepPlan(const Store& store,
                                                     const v1::PlanSweepRequest& req) {
  if (!(req.effect() > 0 && req.effect() < 1)) {
    return absl::InvalidArgumentError("effect must be a fraction in (0, 1), e.g. 0.01 for 1%");
  }
  if (req.has_sd_relative() && !(req.sd_relative() > 0)) {
    return absl::InvalidArgumentError("sd must be positive, e.g. 0.005 for 0.5%");
  }
  absl::StatusOr<PlanTarget> target = LoadTarget(store, req);
  if (!target.ok()) return target.status();
  absl::StatusOr<std::vector<PlacedRun>> runs =
      store.ListSucceededRunsByConfigHash({target->baseline_hash});
  if (!runs.ok()) return runs.status();
  std::vector<double> times, hours;
  for (const PlacedRun& r : *runs) {
    if (r.run.summary.reached_target && r.run.summary.time_to_target_ms) {
      times.push_back(*r.run.summary.time_to_target_ms);
    }
    if (r.run.finished_ms > r.run.started_ms && r.run.started_ms > 0) {
      hours.push_back((r.run.finished_ms - r.run.started_ms) / 3.6e6);
    }
  }
  v1::PlanSweepResponse out;
  out.set_effect(req.effect());
  out.set_power(kPlanPower);
  out.set_alpha(kPlanAlpha);
  out.set_variants(target->variants);
  out.set_gpus_per_run(target->gpus_per_run);
  if (!times.empty()) out.set_mean_time_to_target_ms(SampleMean(times));
  if (times.size() >= 2) out.set_sd_time_to_target_ms(std::sqrt(SampleVariance(times)));
  if (req.has_sd_relative()) {
    out.set_sd_relative(req.sd_relative());
    out.set_basis("the given standard deviation, " + Percent(req.sd_relative()) + " of the mean");
  } else if (times.size() >= 2 && out.mean_time_to_target_ms() > 0) {
    out.set_baseline_runs(static_cast<int>(times.size()));
    out.set_sd_relative(out.sd_time_to_target_ms() / out.mean_time_to_target_ms());
    out.set_basis(std::to_string(times.size()) +
                  " finished runs of the same baseline config (any sweep): standard deviation " +
                  Percent(out.sd_relative()) + " of the mean time to target");
  } else {
    return absl::FailedPreconditionError(
        "only " + std::to_string(times.size()) +
        " finished runs of this baseline reached the target; at least 2 are needed to estimate "
        "the spread: give it with --sd (e.g. --sd 0.5%)");
  }
  out.set_effect_sd(req.effect() / out.sd_relative());
  if (std::optional<int> n = SeedsForPower(out.effect_sd())) {
    out.set_seeds_per_variant(*n);
    out.set_runs(static_cast<int64_t>(*n) * target->variants);
    if (!hours.empty()) {
      const double run_hours = SampleMean(hours);
      out.set_run_hours(run_hours);
      out.set_gpu_hours(out.runs() * run_hours * std::max(1, target->gpus_per_run));
    }
  }
  return out;
}

}  // namespace ablate
