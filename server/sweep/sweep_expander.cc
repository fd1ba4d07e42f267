// Config building and deterministic expansion of a parsed sweep spec.
#include "server/sweep/sweep_expander.h"

#include <map>

#include "server/core/run_order.h"
#include "server/sweep/script_expander.h"
#include "server/sweep/sweep_keys.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"

namespace ablate {
namespace {

using J = nlohmann::json;

// More variants than this is a mistake, not a sweep; it also bounds memory (each variant holds
// its whole config).
constexpr int64_t kMaxSweepVariants = 10000;
// A grid that breaks a cross-knob rule at many points is reported at its first few.
constexpr int kMaxGridErrors = 10;

std::string WithoutKeyPrefix(const Error& e) {
  std::string prefix = e.key + ": ";
  return !e.key.empty() && e.message.starts_with(prefix) ? e.message.substr(prefix.size())
                                                         : e.message;
}

// "a = 1, b = true" for the knobs a variant sets.
std::string DescribeOverrides(const J& overrides) {
  std::string out;
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    out += (out.empty() ? "" : ", ") + it.key() + " = " + it.value().dump();
  }
  return out;
}

// Saturating product of the grid axis sizes (saturates just above kMaxSweepRuns).
int64_t GridPoints(const std::vector<GridAxis>& grid) {
  if (grid.empty()) return 0;
  int64_t n = 1;
  for (const GridAxis& axis : grid) {
    n = std::min<int64_t>(n * static_cast<int64_t>(axis.values.size()), kMaxSweepRuns + 1);
  }
  return n;
}

// The variants of a built-in trainer sweep: baseline (preset at scale, then `set`, then the
// sweep's target), ablations and grid points.
class TrainerVariants {
 public:
  TrainerVariants(const ParsedSpec& spec, SpecErrors* errors, ExpandedSweep* out)
      : spec_(spec), errors_(errors), out_(*out) {}

  std::optional<double> Build();

 private:
  bool BuildBaseline();
  void ExpandAblations();
  void ExpandGrid();
  bool AddGridPoint(const std::vector<size_t>& at);
  bool AddVariant(const std::string& name, const std::string& kind, const J& overrides,
                  const KnobSet* set, SpecPosition at, const std::string& path);

  const ParsedSpec& spec_;
  SpecErrors* errors_;
  ExpandedSweep& out_;
  J baseline_;
  std::string baseline_hash_;
  std::map<std::string, std::string> names_by_hash_;
};

std::optional<double> TrainerVariants::Build() {
  size_t errors_before = errors_->size();
  if (!BuildBaseline()) return std::nullopt;
  if (spec_.include_baseline) AddVariant("baseline", "baseline", J::object(), nullptr, {}, "");
  ExpandAblations();
  ExpandGrid();
  if (errors_->size() != errors_before) return std::nullopt;
  return baseline_["target_val_loss"].get<double>();
}

bool TrainerVariants::BuildBaseline() {
  Result<J> base = spec_.preset.empty() ? CanonicalizeConfig(J::object())
                                        : PresetConfig(spec_.preset, spec_.scale);
  if (base.ok() && spec_.preset.empty()) base = ApplyScale(*base, spec_.scale);
  if (!base.ok()) {
    errors_->Add(spec_.preset_position, "baseline", base.error().message);
    return false;
  }
  const KnobSet& set = spec_.baseline_set;
  Result<J> config = ApplyOverrides(*base, set.values);
  if (!config.ok()) {
    std::string knob = set.Blame(config.error().key, config.error().message);
    errors_->Add(set.PositionFor(knob), set.PathFor(knob), WithoutKeyPrefix(config.error()));
    return false;
  }
  baseline_ = std::move(config).value();
  if (spec_.target_val_loss) {
    if (set.values.contains("target_val_loss") &&
        set.values["target_val_loss"] != J(*spec_.target_val_loss)) {
      errors_->Add(spec_.target_position, "target_val_loss",
                   "conflicts with baseline.set.target_val_loss; set it in one place");
      return false;
    }
    baseline_["target_val_loss"] = *spec_.target_val_loss;
  }
  baseline_hash_ = ConfigHash(baseline_);
  return true;
}

void TrainerVariants::ExpandAblations() {
  for (const AblationSpec& a : spec_.ablations) {
    if (!a.set.ok || a.name.empty()) continue;  // already reported
    AddVariant(a.name, "ablation", a.set.values, &a.set, a.position, a.path);
  }
}

// Odometer over the axes, last axis fastest, so the first key is outermost.
void TrainerVariants::ExpandGrid() {
  if (spec_.grid.empty()) return;
  std::vector<size_t> at(spec_.grid.size(), 0);
  int failures = 0;
  while (true) {
    if (!AddGridPoint(at) && ++failures >= kMaxGridErrors) return;
    size_t k = at.size();
    while (k > 0 && ++at[k - 1] == spec_.grid[k - 1].values.size()) at[--k] = 0;
    if (k == 0) return;
  }
}

bool TrainerVariants::AddGridPoint(const std::vector<size_t>& at) {
  J overrides = J::object();
  std::vector<std::pair<std::string, std::string>> assignments;
  for (size_t k = 0; k < at.size(); ++k) {
    const GridAxis& axis = spec_.grid[k];
    overrides[axis.knob] = axis.values[at[k]];
    assignments.emplace_back(axis.knob, axis.labels[at[k]]);
  }
  return AddVariant(FormatVariantName(assignments), "grid point", overrides, nullptr,
                    spec_.grid_position, "grid");
}

bool TrainerVariants::AddVariant(const std::string& name, const std::string& kind,
                                 const J& overrides, const KnobSet* set, SpecPosition at,
                                 const std::string& path) {
  Result<J> config = ApplyOverrides(baseline_, overrides);
  if (!config.ok()) {
    const Error& e = config.error();
    std::string knob = set ? set->Blame(e.key, e.message) : "";
    errors_->Add(set ? set->PositionFor(knob) : at, set ? set->PathFor(knob) : path,
                 kind + " '" + name + "': " + WithoutKeyPrefix(e));
    return false;
  }
  std::string hash = ConfigHash(*config);
  std::string problem;
  if (kind == "grid point" && hash == baseline_hash_ && spec_.include_baseline) {
    // A grid around the baseline contains the baseline: that point is the baseline's runs.
    out_.notes.push_back("grid point '" + name + "' is the baseline itself (" +
                         DescribeOverrides(overrides) + "): merged with the baseline");
    return true;
  }
  if (kind != "baseline" && kind != "grid point" && hash == baseline_hash_) {
    problem = kind + " '" + name + "' changes nothing: the baseline already has " +
              DescribeOverrides(overrides);
  } else if (auto seen = names_by_hash_.find(hash); seen != names_by_hash_.end()) {
    problem = kind + " '" + name + "' is identical to '" + seen->second + "'";
  }
  if (!problem.empty()) {
    errors_->Add(at, path, problem);
    return false;
  }
  names_by_hash_[hash] = name;
  Variant v;
  v.index = static_cast<int>(out_.variants.size());
  v.name = name;
  v.config_json = CanonicalJson(*config);
  v.config_hash = hash;
  v.diff_json = ConfigDiff(baseline_, *config).dump();
  out_.variants.push_back(std::move(v));
  return true;
}

// Before any variant is built (a grid may name millions): the number of variants and runs.
bool CheckSize(const ParsedSpec& spec, SpecErrors* errors) {
  int64_t grid = GridPoints(spec.grid);
  int64_t variants =
      (spec.include_baseline ? 1 : 0) + static_cast<int64_t>(spec.ablations.size()) + grid;
  SpecPosition at = spec.grid.empty() ? spec.seeds_position : spec.grid_position;
  std::string where = spec.grid.empty() ? "seeds" : "grid";
  if (variants == 0) {
    errors->Add(spec.include_baseline_position, "include_baseline",
                "nothing to run: include_baseline is false and there are no ablations or grid");
    return false;
  }
  if (variants > kMaxSweepVariants) {
    errors->Add(at, where,
                "the sweep has " + std::string(grid > kMaxSweepRuns ? "more than " : "") +
                    std::to_string(variants) + " variants; the limit is " +
                    std::to_string(kMaxSweepVariants));
    return false;
  }
  if (variants * spec.seeds > kMaxSweepRuns) {
    errors->Add(at, where,
                "the sweep expands to " + std::to_string(variants * spec.seeds) + " runs (" +
                    std::to_string(variants) + " variants x " + std::to_string(spec.seeds) +
                    " seeds); the limit is " + std::to_string(kMaxSweepRuns));
    return false;
  }
  return true;
}

// For a script sweep, the sweep keys it cannot honour (sweep_keys.h), at the key's position.
void RefuseKeys(const ParsedSpec& spec, SweepKind kind, SpecErrors* errors) {
  if (kind != SweepKind::kScript) return;
  for (const auto& [name, at] : spec.key_positions) {
    const SweepKey* key = FindSweepKey(name);
    if (key == nullptr || key->scripts != ScriptUse::kRefused) continue;
    errors->Add(at, name, "not for a script sweep: " + std::string(key->why));
  }
}

// For a built-in sweep, the ablation keys only a script sweep honours (sweep_keys.h
// kAblationEntryKeys), at the key's position.
void RefuseAblationKeys(const ParsedSpec& spec, SweepKind kind, SpecErrors* errors) {
  if (kind != SweepKind::kBuiltIn) return;
  for (const AblationSpec& a : spec.ablations) {
    if (!a.same_work) continue;
    const AblationKey* key = FindAblationEntryKey("same_work");
    errors->Add(a.same_work_position, KeyPath(a.path, "same_work"),
                "not for a built-in sweep: " + std::string(key->why));
  }
}

// True when a variant's script links the worker's dataset folder into its run folder.
bool AnyDataLink(const std::vector<Variant>& variants) {
  for (const Variant& v : variants) {
    J config = J::parse(v.config_json, nullptr, false);
    if (config.is_object() && config.contains("script") &&
        config["script"].value("data_link", "") != "") {
      return true;
    }
  }
  return false;
}

// The dataset a sweep's runs need: as named; else for the built-in trainer the preset's
// ("debian-text" at scale tiny); else for scripts none, unless a variant links one.
std::string SweepDataset(const ParsedSpec& spec, SweepKind kind,
                         const std::vector<Variant>& variants) {
  if (spec.dataset) return *spec.dataset;
  if (kind == SweepKind::kScript) return AnyDataLink(variants) ? "fineweb10B" : "";
  if (spec.scale == Scale::kTiny) return "debian-text";
  const Preset* p = spec.preset.empty() ? nullptr : FindPreset(spec.preset);
  return p ? std::string(p->dataset) : "fineweb10B";
}

// Every sweep-level key, for both kinds, in one place (sweep_keys.h lists them).
Sweep FillSweep(const ParsedSpec& spec, std::string_view spec_yaml, SweepKind kind,
                double target_val_loss, const std::vector<Variant>& variants) {
  Sweep s;
  s.name = spec.name;
  s.spec_yaml = std::string(spec_yaml);
  s.baseline_preset = kind == SweepKind::kScript ? "" : spec.preset;
  // A script runs at whatever scale it is written for.
  s.scale = kind == SweepKind::kScript ? "full" : std::string(ScaleName(spec.scale));
  s.dataset = SweepDataset(spec, kind, variants);
  s.target_val_loss = target_val_loss;
  s.seeds = spec.seeds;
  s.seeds_min = spec.seeds_min;
  s.order_seed = spec.order_seed.value_or(DefaultOrderSeed(spec_yaml));
  s.gpus_per_run = spec.gpus_per_run;
  s.priority = spec.priority;
  s.max_concurrent = spec.max_concurrent;
  s.max_attempts = spec.max_attempts;
  s.tags = spec.tags;
  s.pool = spec.pool;
  s.checkpoint_every_ms = kind == SweepKind::kScript ? 0 : spec.checkpoint_every_ms;
  return s;
}

// Variant-major, seed 0 .. seeds-1, each with its rank in the blocked, shuffled order.
std::vector<Run> FillRuns(const std::vector<Variant>& variants, const Sweep& sweep) {
  std::vector<Run> runs;
  runs.reserve(variants.size() * static_cast<size_t>(sweep.seeds));
  const int n = static_cast<int>(variants.size());
  for (const Variant& v : variants) {
    for (int seed = 0; seed < sweep.seeds; ++seed) {
      Run r;
      r.variant_id = v.index;
      r.variant_name = v.name;
      r.seed = seed;
      r.dispatch_order = DispatchRank(static_cast<uint64_t>(sweep.order_seed), seed, v.index, n);
      runs.push_back(std::move(r));
    }
  }
  return runs;
}

}  // namespace

std::string FormatVariantName(const std::vector<std::pair<std::string, std::string>>& assignments) {
  std::string name;
  for (const auto& [knob, value] : assignments) {
    name += (name.empty() ? "" : ",") + knob + "=" + value;
  }
  return name;
}

J RunConfig(const Variant& variant, int seed) {
  J config = J::parse(variant.config_json);
  config["seed"] = seed;
  return config;
}

SweepKind KindOf(const ParsedSpec& spec) {
  if (spec.baseline_script.any() || spec.decompose) return SweepKind::kScript;
  for (const AblationSpec& a : spec.ablations) {
    if (a.script.any()) return SweepKind::kScript;
  }
  return SweepKind::kBuiltIn;
}

// One path for both kinds: only the variants are built per kind; the checks, the sweep's
// settings and the runs are common.
std::optional<ExpandedSweep> ExpandSweep(const ParsedSpec& spec, std::string_view spec_yaml,
                                         SpecErrors* errors, const ScriptUploads* uploads) {
  const SweepKind kind = KindOf(spec);
  const size_t errors_before = errors->size();
  RefuseKeys(spec, kind, errors);
  RefuseAblationKeys(spec, kind, errors);
  if (errors->size() != errors_before || !CheckSize(spec, errors)) return std::nullopt;
  ExpandedSweep out;
  std::optional<double> target =
      kind == SweepKind::kScript
          ? BuildScriptVariants(spec, uploads ? *uploads : ScriptUploads{}, errors, &out)
          : TrainerVariants(spec, errors, &out).Build();
  if (!target || errors->size() != errors_before) return std::nullopt;
  out.sweep = FillSweep(spec, spec_yaml, kind, *target, out.variants);
  out.runs = FillRuns(out.variants, out.sweep);
  return out;
}

}  // namespace ablate
