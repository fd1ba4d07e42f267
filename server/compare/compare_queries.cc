// Gathers a sweep's runs (or every run of a record preset) from the store, runs server/stats over
// them and fills the messages; see compare_queries.h for what counts and the verdict rules.
#include "server/compare/compare_queries.h"

#include <algorithm>
#include <limits>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/compare/compare_decomposition.h"
#include "server/convert/convert.h"
#include "server/stats/confound.h"
#include "common/stats/record_rule.h"
#include "server/stats/sequential_rule.h"
#include "server/stats/verdict.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"
#include "trainer/config/step_work.h"

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

// Worker id -> "cpu" / "<gpus>x <model>", for the runs' places.
using HardwareByWorker = std::map<std::string, std::string>;

std::string HardwareOf(const Store& store, const std::string& worker_id, int gpus_per_run) {
  if (gpus_per_run == 0) return "cpu";
  absl::StatusOr<Worker> w = store.GetWorker(worker_id);
  const std::string model =
      w.ok() && !w->gpus.empty() && !w->gpus[0].model.empty() ? w->gpus[0].model : "unknown GPU";
  return std::to_string(gpus_per_run) + "x " + model;
}

void FillRunPlaces(const std::vector<Run>& runs, const HardwareByWorker& hardware,
                   v1::VariantComparison* out) {
  std::vector<const Run*> ordered;
  for (const Run& r : runs) ordered.push_back(&r);
  std::stable_sort(ordered.begin(), ordered.end(), [](const Run* a, const Run* b) {
    return a->dispatch_order < b->dispatch_order;
  });
  for (const Run* r : ordered) {
    v1::RunPlace* place = out->add_runs();
    place->set_run_id(r->id);
    place->set_seed(r->seed);
    place->set_dispatch_order(r->dispatch_order);
    place->set_worker_id(r->worker_id);
    auto it = hardware.find(r->worker_id);
    if (it != hardware.end()) place->set_hardware(it->second);
    place->set_state(std::string(RunStateName(r->state)));
  }
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
  FillSummary(s.steps_to_target, out->mutable_steps_to_target());
  FillRecordRule(outcomes, target, out->mutable_record_rule());
}

// What decides an ablation's time verdict besides its own comparison.
struct TimeContext {
  bool confounded = false;                  // the confound check failed
  std::optional<SequentialDesign> design;   // sequential seeds
  int blocks_done = 0;                      // sequential: blocks finished in every variant
};

void FillSequential(const SequentialDecision& d, v1::SequentialState* out) {
  out->set_verdict(d.verdict);
  out->set_settled(d.settled);
  out->set_seeds(d.seeds);
  if (d.p_value) out->set_p_value(*d.p_value);
  out->set_boundary(d.boundary);
}

// Adds the deltas and verdicts of an ablation compared with the baseline. The time verdict is the
// sequential rule's for a sequential sweep, and "confounded" when the confound check failed.
void FillComparison(const VariantComparison& c, std::span<const RunOutcome> variant,
                    std::span<const RunOutcome> baseline, const TimeContext& ctx,
                    v1::VariantComparison* out) {
  const VariantStats vs = SummarizeVariant(variant);
  const VariantStats bs = SummarizeVariant(baseline);
  v1::MetricDelta* loss = out->mutable_loss_vs_baseline();
  v1::MetricDelta* time = out->mutable_time_vs_baseline();
  v1::MetricDelta* steps = out->mutable_steps_vs_baseline();
  v1::MetricDelta* step_ms = out->mutable_step_ms_vs_baseline();
  FillDelta(c.final_val_loss, bs.final_val_loss, loss);
  FillDelta(c.time_to_target_ms, bs.time_to_target_ms, time);
  FillDelta(c.steps_to_target, bs.steps_to_target, steps);
  FillDelta(c.mean_step_ms, bs.mean_step_ms, step_ms);
  loss->set_verdict(MetricVerdict(c.final_val_loss, Metric::kFinalValLoss, vs));
  time->set_verdict(MetricVerdict(c.time_to_target_ms, Metric::kTimeToTarget, vs));
  steps->set_verdict(MetricVerdict(c.steps_to_target, Metric::kStepsToTarget, vs));
  step_ms->set_verdict(MetricVerdict(c.mean_step_ms, Metric::kMsPerStep, vs));
  if (ctx.design) {
    const SequentialDecision d = DecideSequential(variant, baseline, *ctx.design, ctx.blocks_done);
    FillSequential(d, out->mutable_sequential());
    if (time->verdict() != "never reached") time->set_verdict(d.verdict);
  }
  if (ctx.confounded) {
    time->set_verdict(kConfoundedTimeVerdict);
    out->set_verdict(ConfoundedVerdict(steps->verdict(), loss->verdict()));
    return;
  }
  out->set_verdict(CombinedVerdict(time->verdict(), loss->verdict()));
}

// One variant with its runs (run id order) and the outcomes of its succeeded runs.
struct VariantRows {
  Variant variant;
  std::vector<Run> runs;
  std::vector<RunOutcome> outcomes;
  // A variant of an imported sweep put beside this sweep's (CompareSweepRequest.with).
  std::optional<v1::ImportedVariant> imported;
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

void FillConfound(const ConfoundCheck& c, v1::ConfoundCheck* out) {
  out->set_tested(c.test.has_value());
  out->set_confounded(c.confounded);
  for (const std::string& v : c.variants) out->add_variants(v);
  if (c.test) {
    out->set_f(c.test->f);
    out->set_df_between(c.test->df_between);
    out->set_df_within(c.test->df_within);
    out->set_p_value(c.test->p_value);
  }
  if (c.relative_spread) out->set_relative_spread(*c.relative_spread);
  out->set_message(c.message);
}

// The confound check over the baseline and the ablations that do its work per step.
ConfoundCheck CheckSweepConfound(const SweepRows& rows) {
  std::vector<SameWorkGroup> groups;
  auto add = [&](const VariantRows& v) {
    groups.push_back(
        {v.variant.name, MetricValues(v.outcomes, Metric::kMsPerStep), v.variant.same_work});
  };
  if (rows.baseline) add(*rows.baseline);
  for (const VariantRows& a : rows.ablations) {
    if (DoesBaselineWork(a.variant)) add(a);
  }
  return CheckConfound(groups);
}

// Blocks (seeds) finished in every variant: seeds 0..k-1 of each have no queued or running run.
int BlocksDone(const SweepRows& rows, int max_seeds) {
  std::vector<bool> open(static_cast<size_t>(max_seeds), false);
  auto scan = [&](const VariantRows& v) {
    for (const Run& r : v.runs) {
      if (!IsTerminal(r.state) && r.seed >= 0 && r.seed < max_seeds) open[r.seed] = true;
    }
  };
  if (rows.baseline) scan(*rows.baseline);
  for (const VariantRows& a : rows.ablations) scan(a);
  int done = 0;
  while (done < max_seeds && !open[done]) ++done;
  return done;
}

// What the tests see of an imported variant: never paired by seed with this sweep's runs (its
// "seeds" are the order of its logs), and without times unless its hardware is this sweep's.
std::vector<RunOutcome> ComparedOutcomes(const VariantRows& a) {
  if (!a.imported) return a.outcomes;
  std::vector<RunOutcome> out = a.outcomes;
  int seed = -1;
  for (RunOutcome& o : out) {
    o.seed = seed--;
    if (!a.imported->like_for_like()) o.time_to_target_ms.reset(), o.mean_step_ms.reset();
  }
  return out;
}

// After FillComparison: an imported row says where it comes from, and where its times do not
// compare, says so in place of their verdicts.
void MarkImported(const VariantRows& a, v1::VariantComparison* row) {
  *row->mutable_imported() = *a.imported;
  for (v1::RunPlace& place : *row->mutable_runs()) {
    place.set_hardware(a.imported->hardware().empty() ? "imported, hardware not said"
                                                      : "imported: " + a.imported->hardware());
  }
  if (a.imported->like_for_like() || !row->has_loss_vs_baseline()) return;
  row->mutable_time_vs_baseline()->set_verdict(kNotComparableVerdict);
  row->mutable_step_ms_vs_baseline()->set_verdict(kNotComparableVerdict);
  const std::string loss = CombinedVerdict("no data", row->loss_vs_baseline().verdict());
  row->set_verdict(loss == "no data" ? std::string(kNotComparableVerdict)
                                     : loss + "; " + kNotComparableVerdict);
}

// Every ablation's row, compared with the baseline when there is one.
void FillAblations(const SweepRows& rows, double target, const TimeContext& ctx,
                   const HardwareByWorker& hardware, v1::CompareSweepResponse* out) {
  std::vector<std::vector<RunOutcome>> outcomes;
  for (const VariantRows& a : rows.ablations) outcomes.push_back(ComparedOutcomes(a));
  const std::vector<RunOutcome> none;
  const std::vector<RunOutcome>& base = rows.baseline ? rows.baseline->outcomes : none;
  const std::vector<VariantComparison> compared = CompareSweep(base, outcomes);
  for (size_t i = 0; i < rows.ablations.size(); ++i) {
    const VariantRows& a = rows.ablations[i];
    v1::VariantComparison* row = out->add_variants();
    FillVariant(a.variant, a.runs, a.outcomes, target, row);
    FillRunPlaces(a.runs, hardware, row);
    if (rows.baseline) {
      TimeContext own = ctx;
      if (a.imported) own.design.reset();  // the sequential rule is this sweep's own
      FillComparison(compared[i], outcomes[i], base, own, row);
    } else {
      row->set_verdict(kNoBaselineVerdict);
    }
    if (a.imported) MarkImported(a, row);
  }
}

// This sweep's hardware as RunPlace says it, when all its placed runs had one kind; "" otherwise.
std::string OwnHardware(const SweepRows& rows, const HardwareByWorker& hardware) {
  std::set<std::string> kinds;
  auto scan = [&](const VariantRows& v) {
    for (const Run& r : v.runs) {
      if (auto it = hardware.find(r.worker_id); it != hardware.end()) kinds.insert(it->second);
    }
  };
  if (rows.baseline) scan(*rows.baseline);
  for (const VariantRows& a : rows.ablations) scan(a);
  return kinds.size() == 1 ? *kinds.begin() : "";
}

constexpr int kMaxWith = 8;

// The variants of the imported sweeps `with`, as rows after this sweep's ablations.
absl::Status AppendImported(const Store& store, const v1::Sweep& own, std::span<const int64_t> with,
                            const std::string& own_hardware, SweepRows* rows) {
  if (static_cast<int>(with.size()) > kMaxWith) {
    return absl::InvalidArgumentError(absl::StrCat("at most ", kMaxWith, " sweeps --with"));
  }
  for (int64_t id : with) {
    absl::StatusOr<Sweep> sweep = store.GetSweep(id);
    if (!sweep.ok()) return sweep.status();
    if (!sweep->imported) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sweep ", id, " ran on this cluster; --with takes sweeps imported from record logs "
                        "(ablate import), and a sweep of yours is compared in its own right"));
    }
    if (id == own.id()) return absl::InvalidArgumentError("a sweep cannot be compared --with itself");
    if (std::abs(sweep->target_val_loss - own.target_val_loss()) > 1e-12) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "imported sweep %d counts time to %.4g and this sweep to %.4g: import the logs again "
          "with --target %.4g",
          id, sweep->target_val_loss, own.target_val_loss(), own.target_val_loss()));
    }
    absl::StatusOr<SweepRows> theirs = LoadSweepRows(store, id);
    if (!theirs.ok()) return theirs.status();
    std::vector<VariantRows> variants;
    if (theirs->baseline) variants.push_back(*std::move(theirs->baseline));
    for (VariantRows& v : theirs->ablations) variants.push_back(std::move(v));
    for (VariantRows& v : variants) {
      v1::ImportedVariant im;
      im.set_sweep_id(id);
      im.set_sweep_name(sweep->name);
      im.set_variant(v.variant.name);
      im.set_hardware(sweep->imported_hardware);
      const bool same = !sweep->imported_hardware.empty() && !own_hardware.empty() &&
                        sweep->imported_hardware == own_hardware;
      im.set_like_for_like(same);
      if (!same) {
        im.set_not_comparable(
            sweep->imported_hardware.empty()
                ? "imported; hardware not said (ablate import --hardware)"
                : absl::StrCat("imported from '", sweep->imported_hardware, "', this sweep ran on ",
                               own_hardware.empty() ? "mixed or unknown hardware" : "'" + own_hardware + "'"));
      }
      v.variant.name = absl::StrCat(v.variant.name, "@imported-", id);
      v.imported = std::move(im);
      rows->ablations.push_back(std::move(v));
    }
  }
  return absl::OkStatus();
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
// What a published record is: the target and GPU count of its official timing.
constexpr double kRecordTarget = 3.28;
constexpr int kRecordGpus = 8;

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

// A group of own runs of one preset: same scale, hardware and dataset.
struct OwnGroupKey {
  Scale scale;
  std::string hardware;
  std::string dataset;
  int gpus_per_run = 0;
  bool known_model = false;
  auto operator<=>(const OwnGroupKey&) const = default;
};

// Own runs of one preset, grouped by scale (in kScales order), hardware and dataset.
using OwnRunGroups = std::map<OwnGroupKey, std::vector<RunOutcome>>;

absl::StatusOr<std::map<std::string, OwnRunGroups>> LoadOwnRuns(const Store& store) {
  const std::map<std::string, PresetAtScale>& hashes = PresetHashes();
  std::vector<std::string> keys;
  for (const auto& [hash, at] : hashes) keys.push_back(hash);
  absl::StatusOr<std::vector<PlacedRun>> runs = store.ListSucceededRunsByConfigHash(keys);
  if (!runs.ok()) return runs.status();
  std::map<std::string, OwnRunGroups> by_preset;
  for (const PlacedRun& r : *runs) {
    const PresetAtScale& at = hashes.at(r.config_hash);
    const OwnGroupKey key{at.scale, Hardware(r), r.dataset, r.gpus_per_run, !r.gpu_model.empty()};
    by_preset[at.preset][key].push_back(ToOutcome(r.run));
  }
  return by_preset;
}

// Why a group of own runs is not comparable with the published record ("" when it is): the
// record is full scale on FineWeb to 3.28 with 8 GPUs of one model (DESIGN §6.3). A run of the
// unchanged preset at full scale has the record's target (its config hash says so).
std::string NotComparable(const OwnGroupKey& k, const std::string& preset) {
  std::vector<std::string> why;
  if (k.scale != Scale::kFull) why.push_back(std::string(ScaleName(k.scale)) + " scale");
  if (!k.dataset.starts_with("fineweb")) why.push_back("dataset " + k.dataset);
  // A script baseline (no preset) names the record it reproduces; its own code sets the target.
  if (Result<nlohmann::json> config = PresetConfig(preset, Scale::kFull);
      !preset.empty() &&
      (!config.ok() || (*config)["target_val_loss"] != nlohmann::json(kRecordTarget))) {
    why.push_back("target is not the record's 3.28");
  }
  if (k.gpus_per_run == 0) {
    why.push_back("cpu");
  } else if (k.gpus_per_run != kRecordGpus) {
    why.push_back(std::to_string(k.gpus_per_run) + " GPUs, not " + std::to_string(kRecordGpus));
  } else if (!k.known_model) {
    why.push_back("GPU model unknown");
  }
  std::string out;
  for (const std::string& w : why) out += (out.empty() ? "" : ", ") + w;
  return out;
}

void FillOwnRuns(const OwnGroupKey& key, const std::string& preset,
                 std::span<const RunOutcome> runs, double record_time_ms,
                 v1::OwnRecordRuns* out) {
  const VariantStats s = SummarizeVariant(runs);
  out->set_scale(std::string(ScaleName(key.scale)));
  out->set_hardware(key.hardware);
  out->set_dataset(key.dataset);
  out->set_n(s.n);
  out->set_n_reached(s.n_reached);
  const std::string not_comparable = NotComparable(key, preset);
  out->set_like_for_like(not_comparable.empty());
  out->set_not_comparable(not_comparable);
  if (s.time_to_target_ms.mean) {
    out->set_mean_time_to_target_ms(*s.time_to_target_ms.mean);
    if (record_time_ms > 0 && not_comparable.empty()) {
      out->set_ratio_to_published(*s.time_to_target_ms.mean / record_time_ms);
    }
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

bool DoesBaselineWork(const Variant& v) {
  if (v.same_work) return true;
  const nlohmann::json diff = nlohmann::json::parse(v.diff_json, nullptr, false);
  if (!diff.is_object()) return false;
  for (auto it = diff.begin(); it != diff.end(); ++it) {
    const nlohmann::json& change = it.value();
    if (!change.is_object() || ChangesStepWork(it.key(), change.value("from", nlohmann::json()),
                                               change.value("to", nlohmann::json()))) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<v1::CompareSweepResponse> BuildSweepComparison(const Store& store,
                                                              int64_t sweep_id,
                                                              std::span<const int64_t> with) {
  v1::CompareSweepResponse out;
  if (absl::Status s = FillSweepHeader(store, sweep_id, &out); !s.ok()) return s;
  absl::StatusOr<SweepRows> rows = LoadSweepRows(store, sweep_id);
  if (!rows.ok()) return rows.status();
  const double target = out.sweep().target_val_loss();
  const v1::Sweep& sweep = out.sweep();
  HardwareByWorker hardware;
  auto note_hardware = [&](const VariantRows& v) {
    for (const Run& r : v.runs) {
      if (!r.worker_id.empty() && !hardware.count(r.worker_id)) {
        hardware[r.worker_id] = HardwareOf(store, r.worker_id, sweep.gpus_per_run());
      }
    }
  };
  if (rows->baseline) note_hardware(*rows->baseline);
  for (const VariantRows& a : rows->ablations) note_hardware(a);
  if (sweep.imported()) {  // its runs ran elsewhere, on what the importer said, if anything
    hardware[kImportedWorkerId] = sweep.imported_hardware().empty()
                                      ? "imported, hardware not said"
                                      : "imported: " + sweep.imported_hardware();
  }
  const ConfoundCheck confound = CheckSweepConfound(*rows);
  FillConfound(confound, out.mutable_confound());
  TimeContext ctx;
  ctx.confounded = confound.confounded;
  if (sweep.seeds_min() > 0) {
    ctx.design = SequentialDesign{sweep.seeds_min(), sweep.seeds(),
                                  PerAblationAlpha(static_cast<int>(rows->ablations.size()))};
    ctx.blocks_done = BlocksDone(*rows, sweep.seeds());
  }
  if (!with.empty()) {
    absl::Status s = AppendImported(store, sweep, with, OwnHardware(*rows, hardware), &*rows);
    if (!s.ok()) return s;
  }
  if (rows->baseline) {
    v1::VariantComparison* row = out.add_variants();
    FillVariant(rows->baseline->variant, rows->baseline->runs, rows->baseline->outcomes, target,
                row);
    FillRunPlaces(rows->baseline->runs, hardware, row);
    row->set_verdict(kBaselineVerdict);
  }
  FillAblations(*rows, target, ctx, hardware, &out);
  std::vector<VariantOutcomes> ablations;  // a decomposed record's table (issue 29)
  for (const VariantRows& a : rows->ablations) ablations.push_back({&a.variant, a.outcomes});
  const std::optional<VariantOutcomes> from =
      rows->baseline ? std::optional<VariantOutcomes>({&rows->baseline->variant,
                                                       rows->baseline->outcomes})
                     : std::nullopt;
  FillDecomposition(from ? &*from : nullptr, ablations, &out);
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
      OwnRunGroups groups;
      for (const PlacedRun& p : it->second) {
        const OwnGroupKey key{Scale::kFull, Hardware(p), p.dataset, p.gpus_per_run,
                              !p.gpu_model.empty()};
        groups[key].push_back(ToOutcome(p.run));
      }
      for (const auto& [key, runs] : groups) {
        v1::OwnRecordRuns* group = row->add_own_runs();
        FillOwnRuns(key, /*preset=*/"", runs, r.record_time_ms, group);
        group->set_script(true);
      }
    }
    if (r.preset.empty()) continue;
    for (const auto& [key, runs] : (*own)[r.preset]) {
      FillOwnRuns(key, r.preset, runs, r.record_time_ms, row->add_own_runs());
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
  absl::StatusOr<std::map<int64_t, ImportedLogInfo>> logs = store.ListImportedLogs(sweep_id);
  if (!logs.ok()) return logs.status();
  for (const Run& run : *runs) {
    absl::StatusOr<v1::ExportedRun> exported = ExportRun(store, run, configs[run.variant_id]);
    if (!exported.ok()) return exported.status();
    if (auto it = logs->find(run.id); it != logs->end()) {
      ToProto(it->second, exported->mutable_run()->mutable_imported());  // ran elsewhere
    }
    if (!emit(*exported)) break;
  }
  return absl::OkStatus();
}

}  // namespace ablate
