// Config building and deterministic expansion of a parsed sweep spec.
#include "server/sweep/sweep_expander.h"

#include <map>

#include "server/core/run_order.h"
#include "server/sweep/script_expander.h"

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

class SweepExpander {
 public:
  SweepExpander(const ParsedSpec& spec, SpecErrors* errors) : spec_(spec), errors_(errors) {}

  std::optional<ExpandedSweep> Expand(std::string_view spec_yaml);

 private:
  bool BuildBaseline();
  bool CheckSize();
  void ExpandAblations();
  void ExpandGrid();
  bool AddGridPoint(const std::vector<size_t>& at);
  bool AddVariant(const std::string& name, const std::string& kind, const J& overrides,
                  const KnobSet* set, SpecPosition at, const std::string& path);
  void FillSweep(std::string_view spec_yaml);
  void FillRuns();

  const ParsedSpec& spec_;
  SpecErrors* errors_;
  J baseline_;
  std::string baseline_hash_;
  std::map<std::string, std::string> names_by_hash_;
  ExpandedSweep out_;
};

std::optional<ExpandedSweep> SweepExpander::Expand(std::string_view spec_yaml) {
  size_t errors_before = errors_->size();
  if (!BuildBaseline() || !CheckSize()) return std::nullopt;
  if (spec_.include_baseline) AddVariant("baseline", "baseline", J::object(), nullptr, {}, "");
  ExpandAblations();
  ExpandGrid();
  if (errors_->size() != errors_before) return std::nullopt;
  FillSweep(spec_yaml);
  FillRuns();
  return std::move(out_);
}

bool SweepExpander::BuildBaseline() {
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

bool SweepExpander::CheckSize() {
  int64_t grid = GridPoints(spec_.grid);
  int64_t variants =
      (spec_.include_baseline ? 1 : 0) + static_cast<int64_t>(spec_.ablations.size()) + grid;
  SpecPosition at = spec_.grid.empty() ? spec_.seeds_position : spec_.grid_position;
  std::string where = spec_.grid.empty() ? "seeds" : "grid";
  if (variants == 0) {
    errors_->Add(spec_.include_baseline_position, "include_baseline",
                 "nothing to run: include_baseline is false and there are no ablations or grid");
    return false;
  }
  if (variants > kMaxSweepVariants) {
    errors_->Add(at, where,
                 "the sweep has " + std::string(grid > kMaxSweepRuns ? "more than " : "") +
                     std::to_string(variants) + " variants; the limit is " +
                     std::to_string(kMaxSweepVariants));
    return false;
  }
  if (variants * spec_.seeds > kMaxSweepRuns) {
    errors_->Add(at, where,
                 "the sweep expands to " + std::to_string(variants * spec_.seeds) + " runs (" +
                     std::to_string(variants) + " variants x " + std::to_string(spec_.seeds) +
                     " seeds); the limit is " + std::to_string(kMaxSweepRuns));
    return false;
  }
  return true;
}

void SweepExpander::ExpandAblations() {
  for (const AblationSpec& a : spec_.ablations) {
    if (!a.set.ok || a.name.empty()) continue;  // already reported
    AddVariant(a.name, "ablation", a.set.values, &a.set, a.position, a.path);
  }
}

// Odometer over the axes, last axis fastest, so the first key is outermost.
void SweepExpander::ExpandGrid() {
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

bool SweepExpander::AddGridPoint(const std::vector<size_t>& at) {
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

bool SweepExpander::AddVariant(const std::string& name, const std::string& kind, const J& overrides,
                               const KnobSet* set, SpecPosition at, const std::string& path) {
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

void SweepExpander::FillSweep(std::string_view spec_yaml) {
  Sweep& s = out_.sweep;
  s.name = spec_.name;
  s.spec_yaml = std::string(spec_yaml);
  s.baseline_preset = spec_.preset;
  s.scale = std::string(ScaleName(spec_.scale));
  if (spec_.dataset) {
    s.dataset = *spec_.dataset;
  } else if (spec_.scale == Scale::kTiny) {
    s.dataset = "debian-text";
  } else {
    const Preset* p = spec_.preset.empty() ? nullptr : FindPreset(spec_.preset);
    s.dataset = p ? std::string(p->dataset) : "fineweb10B";
  }
  s.target_val_loss = baseline_["target_val_loss"].get<double>();
  s.seeds = spec_.seeds;
  s.seeds_min = spec_.seeds_min;
  s.order_seed = spec_.order_seed.value_or(DefaultOrderSeed(spec_yaml));
  s.gpus_per_run = spec_.gpus_per_run;
  s.priority = spec_.priority;
  s.max_concurrent = spec_.max_concurrent;
  s.max_attempts = spec_.max_attempts;
  s.tags = spec_.tags;
  s.pool = spec_.pool;
  s.checkpoint_every_ms = spec_.checkpoint_every_ms;
}

void SweepExpander::FillRuns() {
  out_.runs.reserve(out_.variants.size() * static_cast<size_t>(spec_.seeds));
  const int n = static_cast<int>(out_.variants.size());
  for (const Variant& v : out_.variants) {
    for (int seed = 0; seed < spec_.seeds; ++seed) {
      Run r;
      r.variant_id = v.index;
      r.variant_name = v.name;
      r.seed = seed;
      r.dispatch_order =
          DispatchRank(static_cast<uint64_t>(out_.sweep.order_seed), seed, v.index, n);
      out_.runs.push_back(std::move(r));
    }
  }
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

std::optional<ExpandedSweep> ExpandSweep(const ParsedSpec& spec, std::string_view spec_yaml,
                                         SpecErrors* errors, const ScriptUploads* uploads) {
  if (UsesScripts(spec)) {
    return ExpandScriptSweep(spec, spec_yaml, uploads ? *uploads : ScriptUploads{}, errors);
  }
  return SweepExpander(spec, errors).Expand(spec_yaml);
}

}  // namespace ablate
