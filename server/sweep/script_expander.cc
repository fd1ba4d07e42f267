// Script variants: inherit, resolve snapshots, build configs, diff against the baseline.
#include "server/sweep/script_expander.h"

#include <map>
#include <nlohmann/json.hpp>

#include "trainer/config/knob_schema.h"

namespace ablate {
namespace {

using J = nlohmann::json;

constexpr double kDefaultTarget = 3.28;  // the speedrun's

std::string ShortHash(const std::string& hash) { return hash.substr(0, 12); }

class ScriptExpander {
 public:
  ScriptExpander(const ParsedSpec& spec, const ScriptUploads& uploads, SpecErrors* errors)
      : spec_(spec), uploads_(uploads), errors_(errors) {}

  std::optional<ExpandedSweep> Expand(std::string_view spec_yaml);

 private:
  bool CheckShape();
  std::optional<std::string> Resolve(const ScriptSettings& s);
  std::optional<J> Build(const ScriptSettings& own, const J* base);
  void AddVariant(const std::string& name, const J& config, const ScriptSettings& s);
  J Diff(const J& from, const J& to) const;
  void FillSweep(std::string_view spec_yaml);

  const ParsedSpec& spec_;
  const ScriptUploads& uploads_;
  SpecErrors* errors_;
  J baseline_;
  std::string baseline_hash_;
  std::map<std::string, std::string> names_by_hash_;
  ExpandedSweep out_;
};

std::optional<ExpandedSweep> ScriptExpander::Expand(std::string_view spec_yaml) {
  size_t errors_before = errors_->size();
  if (!CheckShape()) return std::nullopt;
  std::optional<J> base = Build(spec_.baseline_script, nullptr);
  if (!base) return std::nullopt;
  baseline_ = *base;
  baseline_hash_ = ConfigHash(baseline_);
  if (spec_.include_baseline) AddVariant("baseline", baseline_, spec_.baseline_script);
  for (const AblationSpec& a : spec_.ablations) {
    if (a.name.empty()) continue;  // already reported
    J inherited = baseline_;
    inherited["script"].erase("record");  // the baseline's alone
    if (std::optional<J> config = Build(a.script, &inherited)) AddVariant(a.name, *config, a.script);
  }
  if (errors_->size() != errors_before) return std::nullopt;
  if (out_.variants.empty()) {
    errors_->Add(spec_.include_baseline_position, "include_baseline",
                 "nothing to run: include_baseline is false and there are no ablations");
    return std::nullopt;
  }
  FillSweep(spec_yaml);
  for (const Variant& v : out_.variants) {
    for (int seed = 0; seed < spec_.seeds; ++seed) {
      Run r;
      r.variant_id = v.index;
      r.variant_name = v.name;
      r.seed = seed;
      out_.runs.push_back(std::move(r));
    }
  }
  return std::move(out_);
}

// What cannot go with a script baseline: built-in trainer knobs and grids over them.
bool ScriptExpander::CheckShape() {
  bool ok = true;
  if (!spec_.baseline_script.any()) {
    for (const AblationSpec& a : spec_.ablations) {
      if (!a.script.any()) continue;
      errors_->Add(a.position, a.path,
                   "ablation '" + a.name +
                       "' sets script keys, but the baseline runs the built-in trainer; name the "
                       "baseline's script with baseline.script");
      ok = false;
    }
    return ok;
  }
  for (const AblationSpec& a : spec_.ablations) {
    if (a.set.values.empty() && a.set.positions.empty()) continue;
    errors_->Add(a.set.position, KeyPath(a.path, "set"),
                 "set changes knobs of the built-in trainer; a variant of a script baseline "
                 "changes script, launch, command, args, env, log_format or data_link");
    ok = false;
  }
  if (!spec_.grid.empty()) {
    errors_->Add(spec_.grid_position, "grid",
                 "grid varies knobs of the built-in trainer; with a script baseline, list the "
                 "variants under ablations");
    ok = false;
  }
  return ok;
}

// The snapshot hash of the script `s` names, its files kept for the store.
std::optional<std::string> ScriptExpander::Resolve(const ScriptSettings& s) {
  const std::string& path = *s.script;
  const SpecPosition at = s.where.at("script");
  const std::string key = KeyPath(s.path, "script");
  auto it = uploads_.find(path);
  if (it == uploads_.end()) {
    errors_->Add(at, key,
                 "the files of script '" + path +
                     "' did not come with the spec (the ablate CLI reads them next to the spec "
                     "file and uploads them)");
    return std::nullopt;
  }
  if (!it->second.error.empty()) {
    errors_->Add(at, key, "script '" + path + "': " + it->second.error);
    return std::nullopt;
  }
  if (absl::Status st = CheckSnapshot(it->second.files); !st.ok()) {
    errors_->Add(at, key, "script '" + path + "': " + std::string(st.message()));
    return std::nullopt;
  }
  std::string hash = SnapshotHash(it->second.files);
  out_.snapshots.emplace(hash, it->second.files);
  return hash;
}

std::optional<J> ScriptExpander::Build(const ScriptSettings& own, const J* base) {
  J script = base ? (*base)["script"] : J{{"launch", "python"},
                                         {"command", ""},
                                         {"args", J::array()},
                                         {"env", J::object()},
                                         {"log_format", "auto"},
                                         {"data_link", ""}};
  if (own.script) {
    std::optional<std::string> hash = Resolve(own);
    if (!hash) return std::nullopt;
    script["path"] = *own.script;
    script["snapshot"] = *hash;
  }
  if (own.launch) script["launch"] = *own.launch;
  if (own.command) script["command"] = *own.command;
  if (own.args) script["args"] = *own.args;
  if (own.env) {
    for (const auto& [k, v] : *own.env) script["env"][k] = v;  // an ablation adds or changes
  }
  if (own.log_format) script["log_format"] = *own.log_format;
  if (own.data_link) script["data_link"] = *own.data_link;
  if (own.record) script["record"] = *own.record;
  if (script["launch"] == "command" && script["command"] == "") {
    errors_->Add(own.at, KeyPath(own.path, "launch"),
                 "launch: command needs a command: template");
    return std::nullopt;
  }
  if (script["launch"] != "command" && script["command"] != "") {
    SpecPosition at = own.where.count("command") ? own.where.at("command") : own.at;
    errors_->Add(at, KeyPath(own.path, "command"),
                 "command is only used with launch: command (launch is " +
                     script["launch"].dump(-1, ' ', false, J::error_handler_t::replace) + ")");
    return std::nullopt;
  }
  J config = {{"script", script},
              {"target_val_loss", spec_.target_val_loss.value_or(kDefaultTarget)}};
  return config;
}

void ScriptExpander::AddVariant(const std::string& name, const J& config,
                                const ScriptSettings& s) {
  std::string hash = ConfigHash(config);
  std::string problem;
  if (name != "baseline" && hash == baseline_hash_) {
    problem = "ablation '" + name + "' changes nothing: it runs the baseline's script the same way";
  } else if (auto seen = names_by_hash_.find(hash); seen != names_by_hash_.end()) {
    problem = "ablation '" + name + "' is identical to '" + seen->second + "'";
  }
  if (!problem.empty()) {
    errors_->Add(s.at, s.path, problem);
    return;
  }
  names_by_hash_[hash] = name;
  Variant v;
  v.index = static_cast<int>(out_.variants.size());
  v.name = name;
  v.config_json = CanonicalJson(config);
  v.config_hash = hash;
  // A diff of non-UTF-8 files is shown with U+FFFD for the bytes JSON cannot carry.
  v.diff_json = Diff(baseline_, config).dump(-1, ' ', false, J::error_handler_t::replace);
  out_.variants.push_back(std::move(v));
}

J ScriptExpander::Diff(const J& from_config, const J& to_config) const {
  const J& from = from_config["script"];
  const J& to = to_config["script"];
  J diff = J::object();
  for (const char* key : {"launch", "command", "args", "log_format", "data_link"}) {
    if (from[key] != to[key]) diff[key] = {{"from", from[key]}, {"to", to[key]}};
  }
  for (const J* side : {&from["env"], &to["env"]}) {
    for (auto it = side->begin(); it != side->end(); ++it) {
      J a = from["env"].value(it.key(), J()), b = to["env"].value(it.key(), J());
      if (a != b) diff["env." + it.key()] = {{"from", a}, {"to", b}};
    }
  }
  if (from["snapshot"] != to["snapshot"] || from["path"] != to["path"]) {
    const std::string from_hash = from["snapshot"], to_hash = to["snapshot"];
    diff["script"] = {
        {"from", from["path"].get<std::string>() + "@" + ShortHash(from_hash)},
        {"to", to["path"].get<std::string>() + "@" + ShortHash(to_hash)},
        {"diff", UnifiedDiff(out_.snapshots.at(from_hash), out_.snapshots.at(to_hash))}};
  }
  return diff;
}

void ScriptExpander::FillSweep(std::string_view spec_yaml) {
  Sweep& s = out_.sweep;
  s.name = spec_.name;
  s.spec_yaml = std::string(spec_yaml);
  s.baseline_preset = "";
  s.scale = "full";  // a script runs at whatever scale it is written for
  s.dataset = spec_.dataset.value_or("fineweb10B");
  s.target_val_loss = baseline_["target_val_loss"].get<double>();
  s.seeds = spec_.seeds;
  s.gpus_per_run = spec_.gpus_per_run;
  s.priority = spec_.priority;
  s.max_concurrent = spec_.max_concurrent;
  s.max_attempts = spec_.max_attempts;
  s.tags = spec_.tags;
}

}  // namespace

bool UsesScripts(const ParsedSpec& spec) {
  if (spec.baseline_script.any()) return true;
  for (const AblationSpec& a : spec.ablations) {
    if (a.script.any()) return true;
  }
  return false;
}

std::optional<ExpandedSweep> ExpandScriptSweep(const ParsedSpec& spec, std::string_view spec_yaml,
                                               const ScriptUploads& uploads, SpecErrors* errors) {
  return ScriptExpander(spec, uploads, errors).Expand(spec_yaml);
}

}  // namespace ablate
