// Key-by-key reading of a sweep spec document.
#include "server/sweep/spec_reader.h"

#include <array>
#include <map>
#include <span>

#include "common/printable_text.h"
#include "common/spec/checked_entries.h"
#include "common/spec/yaml_values.h"
#include "server/sweep/knob_yaml.h"
#include "server/sweep/script_spec.h"
#include "server/sweep/sweep_keys.h"
#include "trainer/config/knob_schema.h"

namespace ablate {
namespace {

using J = nlohmann::json;

// Every sweep key and its meaning for script sweeps: sweep_keys.h.
constexpr std::array<std::string_view, kNumSweepKeys> kTopLevelKeys = SweepKeyNames();
constexpr std::string_view kSeedsKeys[] = {"min", "max"};
// Script keys (script_spec.h) beside the built-in trainer's.
constexpr std::string_view kBaselineKeys[] = {"preset",     "scale",     "set",       "script",
                                              "launch",     "command",   "args",      "env",
                                              "log_format", "data_link", "processes", "record"};
constexpr std::string_view kAblationKeys[] = {"name",      "set",       "script",   "launch",
                                              "command",   "args",      "env",      "log_format",
                                              "data_link", "processes", "same_work"};
// Bounds on what one spec may list; with aliases (*x) a small text can name big structures,
// so the reader checks sizes before walking them (maps: kMaxMapKeys, checked_entries.h).
constexpr size_t kMaxAblations = 10000;
constexpr size_t kMaxGridValues = 10000;
constexpr size_t kMaxTags = 32;

using Entries = SpecEntries;

std::string PresetList() {
  std::string all;
  for (const Preset& p : AllPresets()) all += (all.empty() ? "" : ", ") + std::string(p.name);
  return all;
}

class SpecReader {
 public:
  explicit SpecReader(SpecErrors* errors) : errors_(errors) {}

  ParsedSpec Read(const YAML::Node& root);

 private:
  void ReadSettings(const Entries& top);
  void ReadSeeds(const YAML::Node& node);
  void ReadGpus(const YAML::Node& node);
  void ReadCheckpointEvery(const YAML::Node& node);
  void ReadTags(const YAML::Node& node);
  void ReadBaseline(const YAML::Node& node);
  void CheckScriptBaseline(Entries& e);
  void CheckDecompose(Entries& top);
  void ReadAblations(const YAML::Node& node);
  void ReadAblation(const YAML::Node& node, size_t index);
  void ReadGrid(const YAML::Node& node);
  void ReadGridAxis(const YAML::Node& key, const YAML::Node& values);
  void RejectSweepWideKnob(std::string_view knob, SpecPosition at, const std::string& path);
  void ReadIntField(const Entries& top, const char* key, int64_t lo, int64_t hi, int* out);

  SpecErrors* errors_;
  ParsedSpec spec_;
  std::map<std::string, int> ablation_names_;  // name -> line of its first use
};

ParsedSpec SpecReader::Read(const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull()) {
    errors_->Add(SpecPosition{}, "",
                 "the spec is empty; expected a map with name, baseline, "
                 "seeds and ablations");
    return spec_;
  }
  if (!root.IsMap()) {
    errors_->Add(root, "",
                 "the spec must be a map of keys (name, baseline, ablations, ...), "
                 "got " +
                     DescribeNode(root));
    return spec_;
  }
  Entries top = CheckedEntries(root, "", kTopLevelKeys, errors_);
  for (const auto& [name, entry] : top) spec_.key_positions[name] = PositionOf(entry.key);
  for (const char* required : {"name", "baseline"}) {
    // With decompose, the baseline is decompose.from and its map (launch, args, ...) optional.
    if (!top.count(required) && !(top.count("decompose") && required == std::string("baseline"))) {
      errors_->Add(root, required, std::string("missing required key '") + required + "'");
    }
  }
  ReadSettings(top);
  if (top.count("baseline")) ReadBaseline(top["baseline"].value);
  if (top.count("ablations")) ReadAblations(top["ablations"].value);
  if (top.count("grid")) ReadGrid(top["grid"].value);
  if (top.count("decompose")) CheckDecompose(top);
  return spec_;
}

void SpecReader::ReadIntField(const Entries& top, const char* key, int64_t lo, int64_t hi,
                              int* out) {
  auto it = top.find(key);
  if (it == top.end()) return;
  if (std::optional<int64_t> v = ReadInt(it->second.value, key, lo, hi, errors_)) {
    *out = static_cast<int>(*v);
  }
}

void SpecReader::ReadSettings(const Entries& top) {
  auto node = [&](const char* key) {
    auto it = top.find(key);
    return it == top.end() ? YAML::Node(YAML::NodeType::Undefined) : it->second.value;
  };
  if (top.count("name"))
    spec_.name = ReadName(node("name"), "name", "sweep name", errors_).value_or("");
  if (top.count("description")) ReadString(node("description"), "description", errors_);
  if (top.count("include_baseline")) {
    spec_.include_baseline_position = PositionOf(node("include_baseline"));
    spec_.include_baseline =
        ReadBool(node("include_baseline"), "include_baseline", errors_).value_or(true);
  }
  if (top.count("target_val_loss")) {
    spec_.target_position = PositionOf(node("target_val_loss"));
    absl::StatusOr<J> v = KnobValueFromYaml(*FindKnob("target_val_loss"), node("target_val_loss"));
    if (v.ok()) {
      spec_.target_val_loss = v->get<double>();
    } else {
      errors_->Add(node("target_val_loss"), "target_val_loss", std::string(v.status().message()));
    }
  }
  if (top.count("seeds")) ReadSeeds(node("seeds"));
  if (top.count("order_seed")) {
    spec_.order_seed = ReadInt(node("order_seed"), "order_seed", 0, (int64_t{1} << 53) - 1, errors_);
  }
  if (top.count("gpus_per_run")) ReadGpus(node("gpus_per_run"));
  ReadIntField(top, "priority", -1000, 1000, &spec_.priority);
  ReadIntField(top, "max_concurrent", 0, 1000000, &spec_.max_concurrent);
  ReadIntField(top, "max_attempts", 1, 20, &spec_.max_attempts);
  if (top.count("dataset"))
    spec_.dataset = ReadName(node("dataset"), "dataset", "dataset", errors_);
  if (top.count("pool")) spec_.pool = ReadName(node("pool"), "pool", "pool name", errors_).value_or("");
  if (top.count("checkpoint_every")) ReadCheckpointEvery(node("checkpoint_every"));
  if (top.count("tags")) ReadTags(node("tags"));
  if (top.count("decompose")) spec_.decompose = ReadDecomposeSpec(node("decompose"), errors_);
}

// A decomposition generates its variants: the spec lists none, and the baseline's script is
// decompose.from.
void SpecReader::CheckDecompose(Entries& top) {
  for (const char* key : {"ablations", "grid"}) {
    if (!top.count(key)) continue;
    errors_->Add(top[key].key, key,
                 std::string(key) + " cannot go with decompose: the variants are FROM, TO and "
                 "each change added to FROM alone and removed from TO alone");
  }
  if (spec_.baseline_script.where.count("script")) {
    errors_->Add(spec_.baseline_script.where.at("script"), "baseline.script",
                 "with decompose the baseline runs decompose.from; remove baseline.script");
  }
}

// Tags are listed by `ablate sweeps` and the dashboard: a bounded number of printable strings.
void SpecReader::ReadTags(const YAML::Node& node) {
  if (node.IsSequence() && node.size() > kMaxTags) {
    errors_->Add(node, "tags", "at most " + std::to_string(kMaxTags) + " tags, got " +
                                   std::to_string(node.size()));
    return;
  }
  std::optional<std::vector<std::string>> tags = ReadStringList(node, "tags", errors_);
  if (!tags) return;
  bool ok = true;
  for (size_t i = 0; i < tags->size(); ++i) {
    if (std::optional<std::string> why = UnprintableReason((*tags)[i])) {
      errors_->Add(node[i], IndexPath("tags", i), "a tag must be printable text; it has a " + *why);
      ok = false;
    }
  }
  if (ok) spec_.tags = *std::move(tags);
}

// `seeds: 8` (fixed) or `seeds: {min: 3, max: 16}` (sequential: server/stats/sequential_rule.h).
void SpecReader::ReadSeeds(const YAML::Node& node) {
  spec_.seeds_position = PositionOf(node);
  if (!node.IsMap()) {
    if (std::optional<int64_t> v = ReadInt(node, "seeds", 1, 1000, errors_)) {
      spec_.seeds = static_cast<int>(*v);
    }
    return;
  }
  Entries e = CheckedEntries(node, "seeds", kSeedsKeys, errors_);
  for (const char* required : {"min", "max"}) {
    if (!e.count(required)) {
      errors_->Add(node, "seeds", std::string("missing key '") + required +
                                      "'; write seeds: {min: 3, max: 16} or seeds: 8");
    }
  }
  if (!e.count("min") || !e.count("max")) return;
  std::optional<int64_t> lo = ReadInt(e["min"].value, "seeds.min", 2, 1000, errors_);
  std::optional<int64_t> hi = ReadInt(e["max"].value, "seeds.max", 2, 1000, errors_);
  if (!lo || !hi) return;
  if (*hi < *lo) {
    errors_->Add(e["max"].value, "seeds.max",
                 "max " + std::to_string(*hi) + " is below min " + std::to_string(*lo));
    return;
  }
  spec_.seeds = static_cast<int>(*hi);
  // min == max is a fixed number of seeds.
  spec_.seeds_min = *lo == *hi ? 0 : static_cast<int>(*lo);
}

void SpecReader::ReadGpus(const YAML::Node& node) {
  std::optional<int64_t> v = ReadInt(node, "gpus_per_run", 0, 512, errors_);
  if (!v) return;
  if (*v > 8 && *v % 8 != 0) {
    errors_->Add(node, "gpus_per_run",
                 std::to_string(*v) +
                     " GPUs cannot be scheduled: use 0 (one CPU slot), 1 to 8 "
                     "(one node), or a multiple of 8 up to 512 (whole nodes)");
    return;
  }
  spec_.gpus_per_run = static_cast<int>(*v);
}

// `checkpoint_every: 10m` (common/spec/duration.h: a unit is always required).
void SpecReader::ReadCheckpointEvery(const YAML::Node& node) {
  std::optional<int64_t> ms = ReadDurationMs(node, "checkpoint_every", errors_);
  if (!ms) return;
  if (*ms < kMinCheckpointEveryMs) {
    errors_->Add(node, "checkpoint_every",
                 "'" + node.Scalar() + "' is too often; checkpoints of a full-scale run take " +
                     "seconds to write: at least 1s (10m is typical)");
  } else {
    spec_.checkpoint_every_ms = *ms;
  }
}

void SpecReader::ReadBaseline(const YAML::Node& node) {
  if (!node.IsMap()) {
    errors_->Add(node, "baseline",
                 "expected a map {preset, scale, set}, got " + DescribeNode(node));
    return;
  }
  Entries e = CheckedEntries(node, "baseline", kBaselineKeys, errors_);
  spec_.baseline_script = ReadScriptSettings(node, "baseline", /*baseline=*/true, errors_);
  CheckScriptBaseline(e);
  if (e.count("preset")) {
    const YAML::Node& p = e["preset"].value;
    spec_.preset_position = PositionOf(p);
    std::optional<std::string> name = ReadString(p, "baseline.preset", errors_);
    if (name && FindPreset(*name) == nullptr) {
      std::vector<std::string_view> names;
      for (const Preset& preset : AllPresets()) names.push_back(preset.name);
      errors_->Add(p, "baseline.preset",
                   "unknown preset '" + *name + "'" + DidYouMean(ClosestNames(*name, names)) +
                       " (available: " + PresetList() + ")");
    } else if (name) {
      spec_.preset = *name;
    }
  }
  if (e.count("scale")) {
    const YAML::Node& s = e["scale"].value;
    std::optional<std::string> name = ReadString(s, "baseline.scale", errors_);
    Result<Scale> scale = name ? ParseScale(*name) : Result<Scale>(Error{"", ""});
    if (name && !scale.ok()) errors_->Add(s, "baseline.scale", scale.error().message);
    if (scale.ok()) spec_.scale = *scale;
  }
  spec_.baseline_set =
      ReadKnobSet(e.count("set") ? e["set"].value : YAML::Node(YAML::NodeType::Undefined),
                  "baseline.set", errors_);
  if (!e.count("set")) spec_.baseline_set.position = PositionOf(node);
}

// A baseline runs either the built-in trainer (preset, scale, set) or a script, never both.
void SpecReader::CheckScriptBaseline(Entries& e) {
  const ScriptSettings& script = spec_.baseline_script;
  if (!script.any()) return;
  if (!script.where.count("script") && !spec_.decompose) {
    std::string key = script.where.begin()->first;
    errors_->Add(script.where.begin()->second, KeyPath("baseline", key),
                 key + " belongs to a script run; name the script with baseline.script");
  }
  for (const char* trainer_key : {"preset", "scale", "set"}) {
    if (!e.count(trainer_key) || !script.where.count("script")) continue;
    errors_->Add(e[trainer_key].key, KeyPath("baseline", trainer_key),
                 std::string(trainer_key) +
                     " configures the built-in trainer; a baseline names either a preset or a "
                     "script, not both");
  }
}

void SpecReader::ReadAblations(const YAML::Node& node) {
  spec_.ablations_position = PositionOf(node);
  if (node.IsNull()) return;  // `ablations:` with nothing: no ablations
  if (!node.IsSequence()) {
    errors_->Add(node, "ablations",
                 "expected a list of {name, set} entries, got " + DescribeNode(node));
    return;
  }
  if (node.size() > kMaxAblations) {
    errors_->Add(node, "ablations",
                 "has " + std::to_string(node.size()) + " entries; the limit is " +
                     std::to_string(kMaxAblations));
    return;
  }
  for (size_t i = 0; i < node.size(); ++i) ReadAblation(node[i], i);
}

void SpecReader::ReadAblation(const YAML::Node& node, size_t index) {
  std::string path = IndexPath("ablations", index);
  if (!node.IsMap()) {
    errors_->Add(node, path, "expected a map {name, set}, got " + DescribeNode(node));
    return;
  }
  Entries e = CheckedEntries(node, path, kAblationKeys, errors_);
  AblationSpec ablation{"", {}, PositionOf(node), path, {}, std::nullopt, {}};
  ablation.script = ReadScriptSettings(node, path, /*baseline=*/false, errors_);
  for (const char* required : {"name", "set"}) {
    if (!e.count(required) && !(ablation.script.any() && std::string_view(required) == "set")) {
      errors_->Add(node, KeyPath(path, required),
                   std::string("missing required key '") + required + "'");
    }
  }
  if (e.count("name")) {
    const YAML::Node& n = e["name"].value;
    std::string name_path = KeyPath(path, "name");
    ablation.name = ReadName(n, name_path, "ablation name", errors_).value_or("");
    if (ablation.name == "baseline") {
      errors_->Add(n, name_path, "'baseline' is reserved for the baseline variant");
    } else if (auto seen = ablation_names_.find(ablation.name);
               !ablation.name.empty() && seen != ablation_names_.end()) {
      errors_->Add(n, name_path,
                   "duplicate ablation name '" + ablation.name + "' (first at line " +
                       std::to_string(seen->second) + ")");
    } else if (!ablation.name.empty()) {
      ablation_names_[ablation.name] = PositionOf(n).line;
    }
  }
  if (e.count("same_work")) {
    ablation.same_work_position = PositionOf(e["same_work"].value);
    ablation.same_work = ReadBool(e["same_work"].value, KeyPath(path, "same_work"), errors_);
  }
  if (e.count("set")) {
    ablation.set = ReadKnobSet(e["set"].value, KeyPath(path, "set"), errors_);
    for (const auto& [knob, at] : ablation.set.positions) {
      RejectSweepWideKnob(knob, at, KeyPath(ablation.set.path, knob));
    }
  }
  spec_.ablations.push_back(std::move(ablation));
}

// `seed` is chosen per run and `target_val_loss` is one per sweep; neither can be an axis.
void SpecReader::RejectSweepWideKnob(std::string_view knob, SpecPosition at,
                                     const std::string& path) {
  if (knob == "seed") {
    errors_->Add(at, path, "the seed is set per run (0 .. seeds-1) and cannot be varied here");
  } else if (knob == "target_val_loss") {
    errors_->Add(at, path,
                 "target_val_loss is one value for the whole sweep; set it at the top level");
  }
}

void SpecReader::ReadGrid(const YAML::Node& node) {
  spec_.grid_position = PositionOf(node);
  if (node.IsNull()) return;
  if (!node.IsMap()) {
    errors_->Add(node, "grid", "expected a map of knob: [values], got " + DescribeNode(node));
    return;
  }
  std::map<std::string, int> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string name = it->first.IsScalar() ? it->first.Scalar() : DescribeNode(it->first);
    if (auto s = seen.find(name); s != seen.end()) {
      errors_->Add(
          it->first, KeyPath("grid", name),
          "duplicate key '" + name + "' (first at line " + std::to_string(s->second) + ")");
      continue;
    }
    seen[name] = PositionOf(it->first).line;
    ReadGridAxis(it->first, it->second);
  }
}

void SpecReader::ReadGridAxis(const YAML::Node& key, const YAML::Node& values) {
  GridAxis axis{key.IsScalar() ? key.Scalar() : DescribeNode(key), {}, {}, PositionOf(key), ""};
  axis.path = KeyPath("grid", axis.knob);
  const KnobSpec* knob = FindKnob(axis.knob);
  if (knob == nullptr) {
    errors_->Add(key, axis.path,
                 "unknown knob '" + axis.knob + "'" + DidYouMean(ClosestKnobNames(axis.knob)) +
                     " (grid keys are dotted knob names, e.g. muon.lr)");
    return;
  }
  RejectSweepWideKnob(axis.knob, axis.position, axis.path);
  if (!values.IsSequence() || values.size() == 0) {
    errors_->Add(values.IsNull() ? key : values, axis.path,
                 values.IsSequence() ? "the list of values is empty"
                                     : "expected a list of values, got " + DescribeNode(values));
    return;
  }
  if (values.size() > kMaxGridValues) {
    errors_->Add(values, axis.path,
                 "has " + std::to_string(values.size()) + " values; the limit is " +
                     std::to_string(kMaxGridValues));
    return;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    std::string path = IndexPath(axis.path, i);
    absl::StatusOr<J> v = KnobValueFromYaml(*knob, values[i]);
    if (!v.ok()) {
      errors_->Add(values[i], path, std::string(v.status().message()));
    } else if (std::find(axis.values.begin(), axis.values.end(), *v) != axis.values.end()) {
      errors_->Add(values[i], path, "value " + v->dump() + " is listed twice");
    } else {
      axis.values.push_back(*v);
      axis.labels.push_back(values[i].IsScalar() ? values[i].Scalar() : v->dump());
    }
  }
  if (axis.values.size() == values.size()) spec_.grid.push_back(std::move(axis));
}

}  // namespace

ParsedSpec ReadSpec(const YAML::Node& root, SpecErrors* errors) {
  return SpecReader(errors).Read(root);
}

}  // namespace ablate
