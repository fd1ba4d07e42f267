// Key-by-key reading of a pools file, with the sweep spec's positioned errors.
#include "server/pools/pool_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <span>
#include <utility>

#include "common/spec/checked_entries.h"
#include "common/spec/spec_document.h"
#include "common/spec/spec_prescan.h"
#include "common/spec/yaml_values.h"
#include "server/pools/slurm_output.h"

namespace ablate {
namespace {

constexpr std::string_view kPoolKeys[] = {
    "name",      "kind",       "partition",  "account",       "qos",         "gpus_per_node",
    "gres",      "max_nodes",  "time_limit", "idle_exit",     "signal_before", "sbatch_args",
    "worker",    "container"};
constexpr std::string_view kWorkerKeys[] = {"binary",    "work_dir", "data_dir",
                                            "token_file", "cpu_slots", "args"};
constexpr std::string_view kContainerKeys[] = {"runtime", "image", "mounts", "args"};

using Entries = SpecEntries;

// Reads one pool's keys, adding an error for each problem.
class PoolReader {
 public:
  PoolReader(const Entries& e, std::string path, SpecErrors* errors)
      : e_(e), path_(std::move(path)), errors_(errors) {}

  std::optional<std::string> Text(const char* key) {
    auto it = e_.find(key);
    if (it == e_.end()) return std::nullopt;
    return ReadString(it->second.value, KeyPath(path_, key), errors_);
  }
  std::optional<std::string> Required(const char* key, const YAML::Node& where) {
    if (!e_.count(key)) errors_->Add(where, KeyPath(path_, key), "is required");
    std::optional<std::string> v = Text(key);
    if (v && v->empty()) errors_->Add(e_.at(key).value, KeyPath(path_, key), "must not be empty");
    return v;
  }
  void Int(const char* key, int64_t lo, int64_t hi, int* out) {
    auto it = e_.find(key);
    if (it == e_.end()) return;
    if (auto v = ReadInt(it->second.value, KeyPath(path_, key), lo, hi, errors_)) *out = int(*v);
  }
  // A duration read by `parse`; `*out` unchanged when absent or bad.
  template <typename Parse>
  void Duration(const char* key, Parse parse, int64_t* out) {
    std::optional<std::string> text = Text(key);
    if (!text) return;
    absl::StatusOr<int64_t> v = parse(*text);
    if (v.ok() && *v > 0) {
      *out = *v;
    } else {
      errors_->Add(e_.at(key).value, KeyPath(path_, key),
                   v.ok() ? "must be positive" : std::string(v.status().message()));
    }
  }
  void List(const char* key, std::vector<std::string>* out) {
    auto it = e_.find(key);
    if (it == e_.end()) return;
    if (auto v = ReadStringList(it->second.value, KeyPath(path_, key), errors_)) *out = *v;
  }

 private:
  const Entries& e_;
  const std::string path_;
  SpecErrors* const errors_;
};

void ReadWorker(const YAML::Node& node, const std::string& path, PoolWorkerConfig* w,
                SpecErrors* errors) {
  Entries e = CheckedEntries(node, path, kWorkerKeys, errors);
  PoolReader r(e, path, errors);
  if (auto v = r.Text("binary")) w->binary = *v;
  w->work_dir = r.Required("work_dir", node).value_or("");
  if (auto v = r.Text("data_dir")) w->data_dir = *v;
  if (auto v = r.Text("token_file")) w->token_file = *v;
  // Paths on the nodes: a pilot starts in whatever directory Slurm gives it, so a relative one
  // would name a different place on each node and in each allocation (issue 41).
  using NodePath = std::pair<const char*, const std::string*>;
  for (const auto& [key, value] : {NodePath{"work_dir", &w->work_dir},
                                   NodePath{"data_dir", &w->data_dir},
                                   NodePath{"token_file", &w->token_file}}) {
    if (!value->empty() && (*value)[0] != '/') {
      errors->Add(e.at(key).value, KeyPath(path, key),
                  "must be an absolute path (the same on every node)");
    }
  }
  if (w->binary.find('/') != std::string::npos && w->binary[0] != '/') {
    errors->Add(e.at("binary").value, KeyPath(path, "binary"),
                "must be a name on the nodes' $PATH or an absolute path");
  }
  r.Int("cpu_slots", 0, 1024, &w->cpu_slots);
  r.List("args", &w->args);
}

void ReadContainer(const YAML::Node& node, const std::string& path, PoolContainerConfig* c,
                   SpecErrors* errors) {
  Entries e = CheckedEntries(node, path, kContainerKeys, errors);
  if (!node.IsMap()) return;
  PoolReader r(e, path, errors);
  std::optional<std::string> runtime = r.Required("runtime", node);
  c->runtime = ParseContainerRuntime(runtime.value_or(""));
  if (runtime && !runtime->empty() && c->runtime == ContainerRuntime::kNone) {
    errors->Add(e.at("runtime").value, KeyPath(path, "runtime"),
                "unknown container runtime '" + *runtime + "'; use pyxis or apptainer");
  }
  c->image = r.Required("image", node).value_or("");
  if (std::string problem = ContainerImageProblem(c->runtime, c->image);
      c->runtime != ContainerRuntime::kNone && !c->image.empty() && !problem.empty()) {
    errors->Add(e.at("image").value, KeyPath(path, "image"), problem);
  }
  r.List("mounts", &c->mounts);
  for (size_t i = 0; i < c->mounts.size(); ++i) {
    if (std::string problem = ContainerMountProblem(c->mounts[i]); !problem.empty()) {
      errors->Add(e.at("mounts").value[i], IndexPath(KeyPath(path, "mounts"), i), problem);
    }
  }
  r.List("args", &c->args);
}

PoolConfig ReadPool(const YAML::Node& node, const std::string& path, SpecErrors* errors) {
  PoolConfig p;
  Entries e = CheckedEntries(node, path, kPoolKeys, errors);
  if (!node.IsMap()) return p;
  PoolReader r(e, path, errors);
  if (!e.count("name")) {
    errors->Add(node, KeyPath(path, "name"), "is required");
  } else {
    p.name = ReadName(e.at("name").value, KeyPath(path, "name"), "pool name", errors).value_or("");
  }
  std::string kind = r.Required("kind", node).value_or("slurm");
  if (kind != "slurm") {
    errors->Add(e.at("kind").value, KeyPath(path, "kind"),
                "unknown pool kind '" + kind + "'; the only kind is 'slurm'");
  }
  p.partition = r.Required("partition", node).value_or("");
  p.account = r.Text("account").value_or("");
  p.qos = r.Text("qos").value_or("");
  r.Int("gpus_per_node", 0, 64, &p.gpus_per_node);
  p.gres = r.Text("gres").value_or(p.gpus_per_node > 0 ? "gpu:" + std::to_string(p.gpus_per_node)
                                                       : "");
  r.Int("max_nodes", 1, 100000, &p.max_nodes);
  r.Duration("time_limit", [](std::string_view t) { return ParseSlurmTimeSeconds(t); },
             &p.time_limit_s);
  r.Duration("idle_exit", DurationMsOrError, &p.idle_exit_ms);
  int64_t signal_before_ms = p.signal_before_s * 1000;
  r.Duration("signal_before", DurationMsOrError, &signal_before_ms);
  p.signal_before_s = std::max<int64_t>(1, signal_before_ms / 1000);
  r.List("sbatch_args", &p.sbatch_args);
  if (!e.count("worker")) errors->Add(node, KeyPath(path, "worker"), "is required");
  else ReadWorker(e.at("worker").value, KeyPath(path, "worker"), &p.worker, errors);
  if (e.count("container")) {
    ReadContainer(e.at("container").value, KeyPath(path, "container"), &p.container, errors);
  }
  return p;
}

}  // namespace

absl::StatusOr<std::vector<PoolConfig>> ParsePoolsConfig(std::string_view yaml_text,
                                                         std::string_view file_name) {
  SpecErrors errors(file_name, yaml_text);
  if (!PrescanSpec(yaml_text, &errors)) return errors.ToStatus();
  std::optional<YAML::Node> root = LoadSpecDocument(yaml_text, &errors);
  if (!root) return errors.ToStatus();
  constexpr std::string_view kTop[] = {"pools"};
  Entries top = CheckedEntries(*root, "", kTop, &errors);
  std::vector<PoolConfig> pools;
  if (root->IsMap() && !top.count("pools")) errors.Add(*root, "pools", "is required");
  if (auto it = top.find("pools"); it != top.end()) {
    const YAML::Node& list = it->second.value;
    if (!list.IsSequence() || list.size() == 0) {
      errors.Add(list, "pools", "expected a list of at least one pool, got " + DescribeNode(list));
    } else {
      std::set<std::string> names;
      for (size_t i = 0; i < list.size(); ++i) {
        PoolConfig p = ReadPool(list[i], IndexPath("pools", i), &errors);
        if (!p.name.empty() && !names.insert(p.name).second) {
          errors.Add(list[i]["name"], KeyPath(IndexPath("pools", i), "name"),
                     "pool '" + p.name + "' is defined twice");
        }
        pools.push_back(std::move(p));
      }
    }
  }
  if (!errors.empty()) return errors.ToStatus();
  return pools;
}

}  // namespace ablate
