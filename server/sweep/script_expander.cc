// Script variants: inherit, resolve snapshots, build configs, diff against the baseline.
#include "server/sweep/script_expander.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/decompose/decompose_scripts.h"
#include "common/script_command.h"
#include "trainer/config/knob_schema.h"

namespace ablate {
namespace {

using J = nlohmann::json;

constexpr double kDefaultTarget = 3.28;  // the speedrun's

std::string ShortHash(const std::string& hash) { return hash.substr(0, 12); }

class ScriptExpander {
 public:
  ScriptExpander(const ParsedSpec& spec, const ScriptUploads& uploads, SpecErrors* errors,
                 ExpandedSweep* out)
      : spec_(spec), uploads_(uploads), errors_(errors), out_(*out) {}

  std::optional<double> Build();

 private:
  bool CheckShape();
  std::optional<std::string> Resolve(const ScriptSettings& s);
  std::optional<J> Build(const ScriptSettings& own, const J* base);
  void AddVariant(const std::string& name, const J& config, const ScriptSettings& s,
                  bool same_work = false, const J& decompose = J());
  J Diff(const J& from, const J& to) const;
  std::string Keep(const Snapshot& files);
  void AddDecomposition(const DecomposedScripts& parts);
  bool CheckArgsPlace(const J& script, const ScriptSettings& own);
  bool CheckProcesses(const J& script, const ScriptSettings& own);

  const ParsedSpec& spec_;
  const ScriptUploads& uploads_;
  SpecErrors* errors_;
  J baseline_;
  std::string baseline_hash_;
  std::map<std::string, std::string> names_by_hash_;
  ExpandedSweep& out_;
};

std::optional<double> ScriptExpander::Build() {
  size_t errors_before = errors_->size();
  if (!CheckShape()) return std::nullopt;
  std::optional<J> base = Build(spec_.baseline_script, nullptr);
  if (!base) return std::nullopt;
  std::optional<DecomposedScripts> parts;
  if (spec_.decompose) {
    parts = DecomposeScripts(*spec_.decompose, uploads_, errors_);
    if (!parts) return std::nullopt;
    (*base)["script"]["path"] = parts->path;
    (*base)["script"]["snapshot"] = Keep(parts->from);
  }
  baseline_ = *base;
  baseline_hash_ = ConfigHash(baseline_);
  if (spec_.include_baseline) AddVariant("baseline", baseline_, spec_.baseline_script);
  if (parts) AddDecomposition(*parts);
  for (const AblationSpec& a : spec_.ablations) {
    if (a.name.empty()) continue;  // already reported
    J inherited = baseline_;
    inherited["script"].erase("record");  // the baseline's alone
    if (std::optional<J> config = Build(a.script, &inherited)) {
      AddVariant(a.name, *config, a.script, a.same_work.value_or(false));
    }
  }
  if (errors_->size() != errors_before) return std::nullopt;
  return baseline_["target_val_loss"].get<double>();
}

// What cannot go with a script baseline: built-in trainer knobs (`grid` is refused with the
// other sweep keys, sweep_keys.h).
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
  // Only when set, so that the configs (and hashes) of sweeps without it stay as they were.
  if (own.processes) script["processes"] = *own.processes;
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
  if (!CheckArgsPlace(script, own) || !CheckProcesses(script, own)) return std::nullopt;
  J config = {{"script", script},
              {"target_val_loss", spec_.target_val_loss.value_or(kDefaultTarget)}};
  return config;
}

// With launch: command, `args` reach the script only through {args} in the template: args with
// nowhere to go would be dropped without a word, so they are refused.
bool ScriptExpander::CheckArgsPlace(const J& script, const ScriptSettings& own) {
  if (script["launch"] != "command" || script["args"].empty()) return true;
  absl::StatusOr<std::vector<std::string>> names =
      CommandPlaceholders(script["command"].get<std::string>());
  if (!names.ok() || std::find(names->begin(), names->end(), "args") != names->end()) return true;
  const char* key = own.where.count("args") ? "args" : own.where.count("command") ? "command" : "";
  errors_->Add(*key ? own.where.at(key) : own.at, KeyPath(own.path, *key ? key : "args"),
               "args " + script["args"].dump(-1, ' ', false, J::error_handler_t::replace) +
                   " would not reach the script: the command template has no {args}; write "
                   "{args} where they go (each is passed shell-quoted), e.g. command: \"{python} "
                   "{script} {args}\"");
  return false;
}

// `processes` sizes a torchrun gang on a CPU slot; on GPUs the gang is one process per GPU.
bool ScriptExpander::CheckProcesses(const J& script, const ScriptSettings& own) {
  if (!script.contains("processes")) return true;
  std::string problem;
  if (script["launch"] != "torchrun") {
    problem = "processes sizes a torchrun gang; launch is " + script["launch"].get<std::string>();
  } else if (spec_.gpus_per_run > 0) {
    problem = "with gpus_per_run " + std::to_string(spec_.gpus_per_run) +
              " torchrun starts one process per GPU; processes is for CPU runs "
              "(gpus_per_run: 0), where the gang shares one CPU slot and uses gloo";
  }
  if (problem.empty()) return true;
  SpecPosition at = own.where.count("processes") ? own.where.at("processes") : own.at;
  errors_->Add(at, KeyPath(own.path, "processes"), problem);
  return false;
}

void ScriptExpander::AddVariant(const std::string& name, const J& config, const ScriptSettings& s,
                                bool same_work, const J& decompose) {
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
  J diff = Diff(baseline_, config);
  if (!decompose.is_null()) diff["script"]["decompose"] = decompose;
  v.diff_json = diff.dump(-1, ' ', false, J::error_handler_t::replace);
  v.same_work = same_work;
  out_.variants.push_back(std::move(v));
}

// The snapshot's hash; its files kept for the store.
std::string ScriptExpander::Keep(const Snapshot& files) {
  std::string hash = SnapshotHash(files);
  out_.snapshots.emplace(hash, files);
  return hash;
}

// TO, add-one-in and leave-one-out variants: the baseline's config with the variant's script.
// Each diff says which changes the variant carries (the comparison's decomposition reads it).
void ScriptExpander::AddDecomposition(const DecomposedScripts& parts) {
  J all = J::array();
  for (const ScriptChange& c : parts.split.changes) all.push_back(c.name);
  for (size_t i = 0; i < parts.variants.size(); ++i) {
    const DecomposeVariant& v = parts.variants[i];
    J config = baseline_;
    config["script"]["snapshot"] = Keep(parts.snapshots[i]);
    J carried = J::array();
    for (int c : v.changes) carried.push_back(parts.split.changes[c].name);
    AddVariant(v.name, config, spec_.baseline_script, false,
               {{"changes", carried}, {"all", all}, {"roles", v.roles}});
  }
  for (const std::string& note : parts.split.notes) out_.notes.push_back("decompose: " + note);
}

J ScriptExpander::Diff(const J& from_config, const J& to_config) const {
  const J& from = from_config["script"];
  const J& to = to_config["script"];
  J diff = J::object();
  for (const char* key : {"launch", "command", "args", "log_format", "data_link", "processes"}) {
    J a = from.value(key, J()), b = to.value(key, J());
    if (a != b) diff[key] = {{"from", a}, {"to", b}};
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

}  // namespace

std::optional<double> BuildScriptVariants(const ParsedSpec& spec, const ScriptUploads& uploads,
                                          SpecErrors* errors, ExpandedSweep* out) {
  return ScriptExpander(spec, uploads, errors, out).Build();
}

}  // namespace ablate
