// Gathers a sweep's runs (or every run of a record preset) from the store, runs server/stats over
// them and fills the messages; see compare_queries.h for what counts and the verdict rules.
#include "server/rpc/compare_queries.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "server/rpc/convert.h"
#include "server/stats/record_rule.h"
#include "server/stats/verdict.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"

namespace ablate {
namespace {

void FillSummary(const SampleStats& in, v1::SampleSummary* out) {
  out->set_n(in.n);
  if (in.mean) out->set_mean(*in.mean);
  if (in.stddev) out->set_stddev(*in.stddev);
  if (auto low = in.CiLow()) out->set_ci_low(*low);
  if (auto high = in.CiHigh()) out->set_ci_high(*high);
}

void FillTest(const TTestResult& in, v1::TTest* out) {
  out->set_t(in.t);
  out->set_df(in.df);
  out->set_p_value(in.p_value);
}

void FillDelta(const MetricComparison& c, const SampleStats& baseline, v1::MetricDelta* out) {
  if (c.difference) {
    out->set_difference(*c.difference);
    if (baseline.mean && *baseline.mean != 0.0) out->set_relative(*c.difference / *baseline.mean);
  }
  if (c.welch) {
    out->set_ci_low(c.welch->difference - c.welch->ci_half_width);
    out->set_ci_high(c.welch->difference + c.welch->ci_half_width);
    FillTest(*c.welch, out->mutable_welch());
  }
  if (c.welch_p_holm) out->set_p_holm(*c.welch_p_holm);
  if (c.paired) FillTest(*c.paired, out->mutable_paired());
  out->set_underpowered(c.underpowered);
}

void FillRecordRule(std::span<const RunOutcome> runs, double target, v1::RecordRuleCheck* out) {
  const RecordRuleResult r = CheckRecordRule(MetricValues(runs, Metric::kFinalValLoss), target);
  out->set_n(r.n);
  if (r.test) FillTest(*r.test, out->mutable_test());
  out->set_passes(r.passes);
  out->set_underpowered(r.underpowered);
}

// One variant's row without the baseline comparison.
void FillVariant(const Variant& v, const std::vector<Run>& runs,
                 std::span<const RunOutcome> outcomes, double target, v1::VariantComparison* out) {
  out->set_variant_id(v.id);
  out->set_index(v.index);
  out->set_name(v.name);
  out->set_diff_json(v.diff_json);
  std::map<RunState, int> counts;
  for (const Run& r : runs) ++counts[r.state];
  ToProto(counts, out->mutable_counts());
  const VariantStats s = SummarizeVariant(outcomes);
  out->set_n(s.n);
  out->set_n_reached(s.n_reached);
  FillSummary(s.final_val_loss, out->mutable_final_val_loss());
  FillSummary(s.time_to_target_ms, out->mutable_time_to_target_ms());
  FillSummary(s.mean_step_ms, out->mutable_mean_step_ms());
  FillRecordRule(outcomes, target, out->mutable_record_rule());
}

// Adds the deltas and verdicts of an ablation compared with the baseline.
void FillComparison(const VariantComparison& c, std::span<const RunOutcome> variant,
                    std::span<const RunOutcome> baseline, v1::VariantComparison* out) {
  const VariantStats vs = SummarizeVariant(variant);
  const VariantStats bs = SummarizeVariant(baseline);
  v1::MetricDelta* loss = out->mutable_loss_vs_baseline();
  v1::MetricDelta* time = out->mutable_time_vs_baseline();
  FillDelta(c.final_val_loss, bs.final_val_loss, loss);
  FillDelta(c.time_to_target_ms, bs.time_to_target_ms, time);
  loss->set_verdict(MetricVerdict(c.final_val_loss, Metric::kFinalValLoss, vs));
  time->set_verdict(MetricVerdict(c.time_to_target_ms, Metric::kTimeToTarget, vs));
  out->set_verdict(CombinedVerdict(time->verdict(), loss->verdict()));
}

// One variant with its runs (run id order) and the outcomes of its succeeded runs.
struct VariantRows {
  Variant variant;
  std::vector<Run> runs;
  std::vector<RunOutcome> outcomes;
};

// A sweep's variants, the baseline apart (absent when the spec had include_baseline: false).
struct SweepRows {
  std::optional<VariantRows> baseline;
  std::vector<VariantRows> ablations;  // index order
};

absl::StatusOr<SweepRows> LoadSweepRows(const Store& store, int64_t sweep_id) {
  absl::StatusOr<std::vector<Variant>> variants = store.ListVariants(sweep_id);
  if (!variants.ok()) return variants.status();
  RunFilter filter;
  filter.sweep_id = sweep_id;
  absl::StatusOr<std::vector<Run>> runs = store.ListRuns(filter);
  if (!runs.ok()) return runs.status();
  std::map<int64_t, VariantRows> by_id;
  for (Variant& v : *variants) by_id[v.id].variant = std::move(v);
  for (Run& r : *runs) {
    VariantRows& rows = by_id[r.variant_id];
    if (r.state == RunState::kSucceeded) rows.outcomes.push_back(ToOutcome(r));
    rows.runs.push_back(std::move(r));
  }
  SweepRows out;
  for (auto& [id, rows] : by_id) {
    if (rows.variant.name == "baseline") {
      out.baseline = std::move(rows);
    } else {
      out.ablations.push_back(std::move(rows));
    }
  }
  std::sort(
      out.ablations.begin(), out.ablations.end(),
      [](const VariantRows& a, const VariantRows& b) { return a.variant.index < b.variant.index; });
  return out;
}

// Every ablation's row, compared with the baseline when there is one.
void FillAblations(const SweepRows& rows, double target, v1::CompareSweepResponse* out) {
  std::vector<std::vector<RunOutcome>> outcomes;
  for (const VariantRows& a : rows.ablations) outcomes.push_back(a.outcomes);
  const std::vector<RunOutcome> none;
  const std::vector<RunOutcome>& base = rows.baseline ? rows.baseline->outcomes : none;
  const std::vector<VariantComparison> compared = CompareSweep(base, outcomes);
  for (size_t i = 0; i < rows.ablations.size(); ++i) {
    const VariantRows& a = rows.ablations[i];
    v1::VariantComparison* row = out->add_variants();
    FillVariant(a.variant, a.runs, a.outcomes, target, row);
    if (rows.baseline) {
      FillComparison(compared[i], a.outcomes, base, row);
    } else {
      row->set_verdict(kNoBaselineVerdict);
    }
  }
}

absl::Status FillSweepHeader(const Store& store, int64_t sweep_id, v1::CompareSweepResponse* out) {
  absl::StatusOr<Sweep> sweep = store.GetSweep(sweep_id);
  if (!sweep.ok()) return sweep.status();
  ToProto(*sweep, out->mutable_sweep());
  absl::StatusOr<std::map<RunState, int>> counts = store.CountRunsByState(sweep_id);
  if (!counts.ok()) return counts.status();
  ToProto(*counts, out->mutable_sweep()->mutable_counts());
  out->set_method(ComparisonMethodText(sweep->target_val_loss));
  return absl::OkStatus();
}

constexpr Scale kScales[] = {Scale::kFull, Scale::kSmall, Scale::kTiny};

struct PresetAtScale {
  std::string preset;
  Scale scale;
};

// The config hash of every shipped preset at every scale.
std::map<std::string, PresetAtScale> ComputePresetHashes() {
  std::map<std::string, PresetAtScale> hashes;
  for (const Preset& p : AllPresets()) {
    for (Scale scale : kScales) {
      Result<nlohmann::json> config = PresetConfig(p.name, scale);
      if (config.ok()) hashes[ConfigHash(*config)] = {std::string(p.name), scale};
    }
  }
  return hashes;
}

// Presets are compiled in, so their hashes are computed once (15 canonicalisations cost ~1 ms,
// 8x the store reads of a records request; bench/compare/NOTES.md).
const std::map<std::string, PresetAtScale>& PresetHashes() {
  static const auto* hashes = new std::map<std::string, PresetAtScale>(ComputePresetHashes());
  return *hashes;
}

std::string Hardware(const PlacedRun& r) {
  if (r.gpus_per_run == 0) return "cpu";
  return std::to_string(r.gpus_per_run) + "x " +
         (r.gpu_model.empty() ? std::string("unknown GPU") : r.gpu_model);
}

// Own runs of one preset, grouped by scale (in kScales order) and hardware.
using OwnRunGroups = std::map<std::tuple<Scale, std::string>, std::vector<RunOutcome>>;

absl::StatusOr<std::map<std::string, OwnRunGroups>> LoadOwnRuns(const Store& store) {
  const std::map<std::string, PresetAtScale>& hashes = PresetHashes();
  std::vector<std::string> keys;
  for (const auto& [hash, at] : hashes) keys.push_back(hash);
  absl::StatusOr<std::vector<PlacedRun>> runs = store.ListSucceededRunsByConfigHash(keys);
  if (!runs.ok()) return runs.status();
  std::map<std::string, OwnRunGroups> by_preset;
  for (const PlacedRun& r : *runs) {
    const PresetAtScale& at = hashes.at(r.config_hash);
    by_preset[at.preset][{at.scale, Hardware(r)}].push_back(ToOutcome(r.run));
  }
  return by_preset;
}

void FillOwnRuns(Scale scale, const std::string& hardware, std::span<const RunOutcome> runs,
                 double record_time_ms, v1::OwnRecordRuns* out) {
  const VariantStats s = SummarizeVariant(runs);
  out->set_scale(std::string(ScaleName(scale)));
  out->set_hardware(hardware);
  out->set_n(s.n);
  out->set_n_reached(s.n_reached);
  if (s.time_to_target_ms.mean) {
    out->set_mean_time_to_target_ms(*s.time_to_target_ms.mean);
    if (record_time_ms > 0) out->set_ratio_to_published(*s.time_to_target_ms.mean / record_time_ms);
  }
  if (s.final_val_loss.mean) out->set_mean_final_val_loss(*s.final_val_loss.mean);
}

void FillRecord(const Record& in, v1::Record* out) {
  out->set_id(in.id);
  out->set_number(in.number);
  out->set_date(in.date);
  out->set_record_time_ms(in.record_time_ms);
  if (in.steps) out->set_steps(*in.steps);
  if (in.ms_per_step) out->set_ms_per_step(*in.ms_per_step);
  out->set_description(in.description);
  out->set_source(in.source);
  out->set_preset(in.preset);
}

// The run's full config: its variant's canonical config with the run's seed.
std::string ConfigWithSeed(const std::string& config_json, int seed) {
  nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
  if (!config.is_object()) return config_json;
  config["seed"] = seed;
  return CanonicalJson(config);
}

absl::StatusOr<v1::ExportedRun> ExportRun(const Store& store, const Run& run,
                                          const std::string& variant_config) {
  v1::ExportedRun out;
  ToProto(run, out.mutable_run());
  out.mutable_run()->set_config_json(ConfigWithSeed(variant_config, run.seed));
  absl::StatusOr<std::vector<Attempt>> attempts = store.ListAttempts(run.id);
  if (!attempts.ok()) return attempts.status();
  for (const Attempt& a : *attempts) ToProto(a, out.mutable_run()->add_attempts());
  absl::StatusOr<std::vector<MetricPoint>> points =
      store.ListMetricPoints(run.id, std::numeric_limits<int64_t>::min(), 0);
  if (!points.ok()) return points.status();
  for (const MetricPoint& p : *points) ToProto(p, out.add_points());
  return out;
}

}  // namespace

RunOutcome ToOutcome(const Run& run) {
  RunOutcome o;
  o.seed = run.seed;
  o.final_val_loss = run.summary.final_val_loss;
  o.reached_target = run.summary.reached_target;
  if (o.reached_target) o.time_to_target_ms = run.summary.time_to_target_ms;
  o.mean_step_ms = run.summary.mean_step_ms;
  return o;
}

absl::StatusOr<v1::CompareSweepResponse> BuildSweepComparison(const Store& store,
                                                              int64_t sweep_id) {
  v1::CompareSweepResponse out;
  if (absl::Status s = FillSweepHeader(store, sweep_id, &out); !s.ok()) return s;
  absl::StatusOr<SweepRows> rows = LoadSweepRows(store, sweep_id);
  if (!rows.ok()) return rows.status();
  const double target = out.sweep().target_val_loss();
  if (rows->baseline) {
    v1::VariantComparison* row = out.add_variants();
    FillVariant(rows->baseline->variant, rows->baseline->runs, rows->baseline->outcomes, target,
                row);
    row->set_verdict(kBaselineVerdict);
  }
  FillAblations(*rows, target, &out);
  return out;
}

absl::StatusOr<v1::ListRecordsResponse> BuildRecordsTable(const Store& store) {
  absl::StatusOr<std::vector<Record>> records = store.ListRecords();
  if (!records.ok()) return records.status();
  absl::StatusOr<std::map<std::string, OwnRunGroups>> own = LoadOwnRuns(store);
  if (!own.ok()) return own.status();
  absl::StatusOr<std::map<std::string, std::vector<PlacedRun>>> scripted =
      store.ListSucceededRunsByScriptRecord();
  if (!scripted.ok()) return scripted.status();
  v1::ListRecordsResponse out;
  for (const Record& r : *records) {
    v1::RecordRow* row = out.add_records();
    FillRecord(r, row->mutable_record());
    // Script baselines that name this record (`record:`, issue 14): a script runs the record's
    // own code at full scale; grouped by hardware like preset runs.
    if (auto it = scripted->find(r.id); it != scripted->end()) {
      std::map<std::string, std::vector<RunOutcome>> by_hardware;
      for (const PlacedRun& p : it->second) by_hardware[Hardware(p)].push_back(ToOutcome(p.run));
      for (const auto& [hardware, runs] : by_hardware) {
        v1::OwnRecordRuns* group = row->add_own_runs();
        FillOwnRuns(Scale::kFull, hardware, runs, r.record_time_ms, group);
        group->set_script(true);
      }
    }
    if (r.preset.empty()) continue;
    for (const auto& [key, runs] : (*own)[r.preset]) {
      FillOwnRuns(std::get<0>(key), std::get<1>(key), runs, r.record_time_ms, row->add_own_runs());
    }
  }
  return out;
}

absl::Status ExportSweepRuns(const Store& store, int64_t sweep_id,
                             absl::FunctionRef<bool(const v1::ExportedRun&)> emit) {
  absl::StatusOr<std::vector<Variant>> variants = store.ListVariants(sweep_id);
  if (!variants.ok()) return variants.status();
  std::map<int64_t, std::string> configs;
  for (const Variant& v : *variants) configs[v.id] = v.config_json;
  RunFilter filter;
  filter.sweep_id = sweep_id;
  absl::StatusOr<std::vector<Run>> runs = store.ListRuns(filter);
  if (!runs.ok()) return runs.status();
  for (const Run& run : *runs) {
    absl::StatusOr<v1::ExportedRun> exported = ExportRun(store, run, configs[run.variant_id]);
    if (!exported.ok()) return exported.status();
    if (!emit(*exported)) break;
  }
  return absl::OkStatus();
}

}  // namespace ablate
