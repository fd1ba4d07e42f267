// Reading and checking the script keys of one baseline or ablation entry.
#include "server/sweep/script_spec.h"

#include <algorithm>

#include "common/script_command.h"
#include "common/spec/yaml_values.h"

namespace ablate {
namespace {

constexpr size_t kMaxArgs = 1000;
constexpr size_t kMaxValueChars = 8192;

std::string Choices(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : " | ") + std::string(n);
  return out;
}

// A scalar as written, at most kMaxValueChars characters.
std::optional<std::string> Scalar(const YAML::Node& node, const std::string& path,
                                  SpecErrors* errors) {
  if (!node.IsScalar()) {
    errors->Add(node, path, "expected a string, got " + DescribeNode(node));
    return std::nullopt;
  }
  if (node.Scalar().size() > kMaxValueChars) {
    errors->Add(node, path, "is longer than " + std::to_string(kMaxValueChars) + " characters");
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<std::string> Choice(const YAML::Node& node, const std::string& path,
                                  std::span<const std::string_view> allowed, SpecErrors* errors) {
  std::optional<std::string> v = Scalar(node, path, errors);
  if (!v) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
    errors->Add(node, path, "unknown value '" + *v + "'; expected " + Choices(allowed));
    return std::nullopt;
  }
  return v;
}

// A relative path inside the run folder (no absolute path, no "..").
std::optional<std::string> RelativePath(const YAML::Node& node, const std::string& path,
                                        std::string_view what, SpecErrors* errors) {
  std::optional<std::string> v = Scalar(node, path, errors);
  if (!v) return std::nullopt;
  std::string p = *v;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (absl::Status s = CheckSnapshotPath(p); !s.ok()) {
    errors->Add(node, path,
                std::string(what) + " '" + *v +
                    "' must be a relative path without '.' or '..' parts (e.g. data/fineweb10B)");
    return std::nullopt;
  }
  return p;
}

std::optional<std::vector<std::string>> Args(const YAML::Node& node, const std::string& path,
                                             SpecErrors* errors) {
  if (!node.IsSequence()) {
    errors->Add(node, path, "expected a list of arguments, got " + DescribeNode(node));
    return std::nullopt;
  }
  if (node.size() > kMaxArgs) {
    errors->Add(node, path, "has more than " + std::to_string(kMaxArgs) + " arguments");
    return std::nullopt;
  }
  std::vector<std::string> args;
  for (size_t i = 0; i < node.size(); ++i) {
    std::optional<std::string> a = Scalar(node[i], IndexPath(path, i), errors);
    if (!a) return std::nullopt;
    args.push_back(*a);
  }
  return args;
}

std::optional<std::map<std::string, std::string>> Env(const YAML::Node& node,
                                                      const std::string& path,
                                                      SpecErrors* errors) {
  if (!node.IsMap()) {
    errors->Add(node, path, "expected a map {NAME: value}, got " + DescribeNode(node));
    return std::nullopt;
  }
  std::map<std::string, std::string> env;
  bool ok = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    YAML::Node key = it->first;
    std::string name = key.IsScalar() ? key.Scalar() : DescribeNode(key);
    std::string key_path = KeyPath(path, name);
    if (std::string problem = EnvNameProblem(name); !problem.empty()) {
      errors->Add(key, key_path, problem);
      ok = false;
    } else if (env.count(name)) {
      errors->Add(key, key_path, "duplicate key '" + name + "'");
      ok = false;
    } else if (std::optional<std::string> v = Scalar(it->second, key_path, errors)) {
      env[name] = *v;
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return env;
}

class SettingsReader {
 public:
  SettingsReader(const std::string& path, SpecErrors* errors) : errors_(errors) {
    out_.path = path;
  }

  ScriptSettings Read(const YAML::Node& map, bool baseline) {
    out_.at = PositionOf(map);
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->first.IsScalar()) continue;  // reported by the caller's key check
      const std::string key = it->first.Scalar();
      const YAML::Node value = it->second;
      bool is_script_key =
          std::find(std::begin(kScriptKeys), std::end(kScriptKeys), key) != std::end(kScriptKeys);
      if (!is_script_key && !(baseline && key == "record")) continue;
      out_.where[key] = PositionOf(value);
      ReadKey(key, value, KeyPath(out_.path, key));
    }
    CheckCommand(map);
    return std::move(out_);
  }

 private:
  void ReadKey(const std::string& key, const YAML::Node& value, const std::string& path) {
    if (key == "script") {
      out_.script = RelativeOrNested(value, path);
    } else if (key == "launch") {
      out_.launch = Choice(value, path, kLaunchKinds, errors_);
    } else if (key == "command") {
      out_.command = Scalar(value, path, errors_);
      if (out_.command) {
        if (auto names = CommandPlaceholders(*out_.command); !names.ok()) {
          errors_->Add(value, path, std::string(names.status().message()));
        }
      }
    } else if (key == "args") {
      out_.args = Args(value, path, errors_);
    } else if (key == "env") {
      out_.env = Env(value, path, errors_);
    } else if (key == "log_format") {
      static constexpr std::string_view kFormats[] = {"auto", "modded-nanogpt", "ablate-events"};
      out_.log_format = Choice(value, path, kFormats, errors_);
    } else if (key == "processes") {
      if (std::optional<int64_t> n = ReadInt(value, path, 1, kMaxScriptProcesses, errors_)) {
        out_.processes = static_cast<int>(*n);
      }
    } else if (key == "data_link") {
      out_.data_link = RelativePath(value, path, "data_link", errors_);
    } else if (key == "record") {
      out_.record = Scalar(value, path, errors_);
      if (out_.record && out_.record->empty()) {
        errors_->Add(value, path, "names a row of the records table, e.g. \"20\"");
      }
    }
  }

  // A script may live beside the spec or below it; "../x" is refused like any path that leaves
  // the spec's folder would be on the nodes.
  std::optional<std::string> RelativeOrNested(const YAML::Node& value, const std::string& path) {
    return RelativePath(value, path, "script", errors_);
  }

  // `command:` belongs to launch: command, and launch: command needs it.
  void CheckCommand(const YAML::Node& map) {
    bool has_command = out_.where.count("command") > 0;
    if (has_command && out_.launch && *out_.launch != "command") {
      errors_->Add(out_.where["command"], KeyPath(out_.path, "command"),
                   "command is only used with launch: command (launch is '" + *out_.launch +
                       "')");
    } else if (has_command && !out_.where.count("launch") && out_.path == "baseline") {
      errors_->Add(out_.where["command"], KeyPath(out_.path, "command"),
                   "command needs launch: command beside it");
    }
    if (out_.launch == "command" && !has_command && out_.path == "baseline") {
      errors_->Add(map, KeyPath(out_.path, "launch"),
                   "launch: command needs a command: template beside it");
    }
  }

  SpecErrors* errors_;
  ScriptSettings out_;
};

}  // namespace

ScriptSettings ReadScriptSettings(const YAML::Node& map, const std::string& path, bool baseline,
                                  SpecErrors* errors) {
  return SettingsReader(path, errors).Read(map, baseline);
}

}  // namespace ablate
