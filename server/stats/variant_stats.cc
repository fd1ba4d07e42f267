// Per-variant summaries, baseline comparisons and the sweep-wide Holm correction.
#include "server/stats/variant_stats.h"

#include <algorithm>
#include <map>
#include <utility>

#include "server/stats/holm.h"

namespace ablate {
namespace {

// The run's value of `metric`, or nullopt when the run does not enter it (variant_stats.h).
std::optional<double> ValueOf(const RunOutcome& run, Metric metric) {
  switch (metric) {
    case Metric::kFinalValLoss:
      return run.final_val_loss;
    case Metric::kTimeToTarget:
      return run.reached_target ? run.time_to_target_ms : std::nullopt;
    case Metric::kStepsToTarget:
      return run.reached_target ? run.steps_to_target : std::nullopt;
    case Metric::kMsPerStep:
      return run.mean_step_ms;
  }
  return std::nullopt;
}

bool EntersMetric(const RunOutcome& run, Metric metric) {
  return ValueOf(run, metric).has_value();
}

double MetricValue(const RunOutcome& run, Metric metric) { return *ValueOf(run, metric); }

// seed -> value, or nullopt when a seed repeats (then the runs cannot be paired).
std::optional<std::map<int, double>> BySeed(std::span<const RunOutcome> runs, Metric metric) {
  std::map<int, double> by_seed;
  for (const RunOutcome& run : runs) {
    if (!EntersMetric(run, metric)) continue;
    if (!by_seed.emplace(run.seed, MetricValue(run, metric)).second) return std::nullopt;
  }
  return by_seed;
}

std::optional<TTestResult> PairedBySeed(std::span<const RunOutcome> variant,
                                        std::span<const RunOutcome> baseline, Metric metric) {
  const auto a = BySeed(variant, metric);
  const auto b = BySeed(baseline, metric);
  if (!a || !b || a->size() != b->size()) return std::nullopt;
  std::vector<double> xs, ys;
  for (const auto& [seed, value] : *a) {
    const auto it = b->find(seed);
    if (it == b->end()) return std::nullopt;
    xs.push_back(value);
    ys.push_back(it->second);
  }
  return PairedTest(xs, ys);
}

void FillHolm(std::vector<VariantComparison>& out, MetricComparison VariantComparison::*field) {
  std::vector<double> raw;
  for (const VariantComparison& c : out) {
    if ((c.*field).welch) raw.push_back((c.*field).welch->p_value);
  }
  const std::vector<double> adjusted = HolmAdjust(raw);
  size_t next = 0;
  for (VariantComparison& c : out) {
    if ((c.*field).welch) (c.*field).welch_p_holm = adjusted[next++];
  }
}

}  // namespace

std::vector<double> MetricValues(std::span<const RunOutcome> runs, Metric metric) {
  std::vector<double> values;
  for (const RunOutcome& run : runs) {
    if (EntersMetric(run, metric)) values.push_back(MetricValue(run, metric));
  }
  return values;
}

VariantStats SummarizeVariant(std::span<const RunOutcome> runs) {
  VariantStats s;
  s.n = static_cast<int>(runs.size());
  s.n_reached = static_cast<int>(std::count_if(
      runs.begin(), runs.end(), [](const RunOutcome& r) { return r.reached_target; }));
  if (s.n > 0) s.reached_fraction = static_cast<double>(s.n_reached) / s.n;
  s.final_val_loss = SummarizeSample(MetricValues(runs, Metric::kFinalValLoss));
  s.time_to_target_ms = SummarizeSample(MetricValues(runs, Metric::kTimeToTarget));
  s.steps_to_target = SummarizeSample(MetricValues(runs, Metric::kStepsToTarget));
  s.mean_step_ms = SummarizeSample(MetricValues(runs, Metric::kMsPerStep));
  return s;
}

MetricComparison CompareMetric(std::span<const RunOutcome> variant,
                               std::span<const RunOutcome> baseline, Metric metric) {
  const std::vector<double> a = MetricValues(variant, metric);
  const std::vector<double> b = MetricValues(baseline, metric);
  MetricComparison c;
  c.n_variant = static_cast<int>(a.size());
  c.n_baseline = static_cast<int>(b.size());
  if (!a.empty() && !b.empty()) c.difference = SampleMean(a) - SampleMean(b);
  c.welch = WelchTest(a, b);
  c.paired = PairedBySeed(variant, baseline, metric);
  c.underpowered = c.n_variant < kMinRunsToTell || c.n_baseline < kMinRunsToTell;
  return c;
}

std::vector<VariantComparison> CompareSweep(std::span<const RunOutcome> baseline,
                                            const std::vector<std::vector<RunOutcome>>& ablations) {
  std::vector<VariantComparison> out;
  out.reserve(ablations.size());
  for (const std::vector<RunOutcome>& ablation : ablations) {
    out.push_back({CompareMetric(ablation, baseline, Metric::kFinalValLoss),
                   CompareMetric(ablation, baseline, Metric::kTimeToTarget),
                   CompareMetric(ablation, baseline, Metric::kStepsToTarget),
                   CompareMetric(ablation, baseline, Metric::kMsPerStep)});
  }
  FillHolm(out, &VariantComparison::final_val_loss);
  FillHolm(out, &VariantComparison::time_to_target_ms);
  FillHolm(out, &VariantComparison::steps_to_target);
  FillHolm(out, &VariantComparison::mean_step_ms);
  return out;
}

}  // namespace ablate
