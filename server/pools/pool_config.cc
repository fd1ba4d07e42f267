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
constexpr std::string_view kSshPoolKeys[] = {
    "name",      "kind",          "hosts",     "identity_file", "known_hosts", "host_keys",
    "ssh_args",  "gpus_per_node", "min_nodes", "idle_exit",     "bundle",      "worker"};
constexpr std::string_view kSshWorkerKeys[] = {"bundle_dir", "work_dir",  "data_dir", "checkpoint_dir",
                                               "token_file", "cpu_slots", "args"};

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

void ReadWorker(const YAML::Node& node, const std::string& path, PoolKind kind,
                PoolWorkerConfig* w, SpecErrors* errors) {
  const bool ssh = kind == PoolKind::kSsh;
  Entries e = ssh ? CheckedEntries(node, path, kSshWorkerKeys, errors)
                  : CheckedEntries(node, path, kWorkerKeys, errors);
  PoolReader r(e, path, errors);
  if (auto v = r.Text("binary")) w->binary = *v;
  w->work_dir = r.Required("work_dir", node).value_or("");
  if (auto v = r.Text("data_dir")) w->data_dir = *v;
  if (auto v = r.Text("token_file")) w->token_file = *v;
  if (ssh) w->bundle_dir = r.Required("bundle_dir", node).value_or("");
  if (auto v = r.Text("checkpoint_dir")) w->checkpoint_dir = *v;
  // Paths on the nodes: a pilot starts in whatever directory Slurm gives it, so a relative one
  // would name a different place on each node and in each allocation (issue 41). An ssh pool's
  // token_file is the coordinator's, read at its start: absolute too.
  using NodePath = std::pair<const char*, const std::string*>;
  for (const auto& [key, value] : {NodePath{"work_dir", &w->work_dir},
                                   NodePath{"data_dir", &w->data_dir},
                                   NodePath{"token_file", &w->token_file},
                                   NodePath{"bundle_dir", &w->bundle_dir},
                                   NodePath{"checkpoint_dir", &w->checkpoint_dir}}) {
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

// The hosts of an ssh pool: each user@host[:port], none twice.
void ReadHosts(const YAML::Node& list, const std::string& path, PoolSshConfig* ssh,
               SpecErrors* errors) {
  std::optional<std::vector<std::string>> texts = ReadStringList(list, path, errors);
  if (!texts) return;
  if (texts->empty()) errors->Add(list, path, "expected at least one user@host[:port]");
  std::set<std::string> keys;
  for (size_t i = 0; i < texts->size(); ++i) {
    absl::StatusOr<SshHost> h = ParseSshHost((*texts)[i]);
    if (!h.ok()) {
      errors->Add(list[i], IndexPath(path, i), std::string(h.status().message()));
    } else if (!keys.insert(h->key).second) {
      errors->Add(list[i], IndexPath(path, i), "host '" + h->text + "' is listed twice");
    } else {
      ssh->hosts.push_back(*std::move(h));
    }
  }
}

void ReadSshPool(const Entries& e, const YAML::Node& node, const std::string& path, PoolConfig* p,
                 SpecErrors* errors) {
  PoolReader r(e, path, errors);
  PoolSshConfig& ssh = p->ssh;
  if (!e.count("hosts")) errors->Add(node, KeyPath(path, "hosts"), "is required");
  else ReadHosts(e.at("hosts").value, KeyPath(path, "hosts"), &ssh, errors);
  ssh.identity_file = r.Text("identity_file").value_or("");
  ssh.known_hosts = r.Text("known_hosts").value_or("");
  std::string keys = r.Text("host_keys").value_or("strict");
  if (keys != "strict" && keys != "accept-new") {
    errors->Add(e.at("host_keys").value, KeyPath(path, "host_keys"),
                "'" + keys + "' is not strict or accept-new");
  }
  ssh.accept_new_host_keys = keys == "accept-new";
  r.List("ssh_args", &ssh.ssh_args);
  r.Int("gpus_per_node", 0, 64, &p->gpus_per_node);
  r.Int("min_nodes", 0, 100000, &ssh.min_nodes);
  p->max_nodes = std::max<int>(1, int(ssh.hosts.size()));
  if (ssh.min_nodes > int(ssh.hosts.size()) && e.count("min_nodes")) {
    errors->Add(e.at("min_nodes").value, KeyPath(path, "min_nodes"),
                "is more than the pool's " + std::to_string(ssh.hosts.size()) + " host(s)");
  }
  r.Duration("idle_exit", DurationMsOrError, &p->idle_exit_ms);
  ssh.bundle = r.Required("bundle", node).value_or("");
  if (!e.count("worker")) errors->Add(node, KeyPath(path, "worker"), "is required");
  else ReadWorker(e.at("worker").value, KeyPath(path, "worker"), PoolKind::kSsh, &p->worker, errors);
}

// `kind` as written ("slurm" when absent or not text: the missing or bad key is reported then).
std::string KindOf(const YAML::Node& node) {
  if (!node.IsMap() || !node["kind"] || !node["kind"].IsScalar()) return "slurm";
  return node["kind"].Scalar();
}

PoolConfig ReadPool(const YAML::Node& node, const std::string& path, SpecErrors* errors) {
  PoolConfig p;
  const bool ssh = KindOf(node) == "ssh";
  Entries e = ssh ? CheckedEntries(node, path, kSshPoolKeys, errors)
                  : CheckedEntries(node, path, kPoolKeys, errors);
  if (!node.IsMap()) return p;
  PoolReader r(e, path, errors);
  if (!e.count("name")) {
    errors->Add(node, KeyPath(path, "name"), "is required");
  } else {
    p.name = ReadName(e.at("name").value, KeyPath(path, "name"), "pool name", errors).value_or("");
  }
  std::string kind = r.Required("kind", node).value_or("slurm");
  if (ssh) {
    p.kind = PoolKind::kSsh;
    ReadSshPool(e, node, path, &p, errors);
    return p;
  }
  if (kind != "slurm") {
    errors->Add(e.at("kind").value, KeyPath(path, "kind"),
                "unknown pool kind '" + kind + "'; the kinds are 'slurm' and 'ssh'");
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
  else ReadWorker(e.at("worker").value, KeyPath(path, "worker"), PoolKind::kSlurm, &p.worker, errors);
  if (e.count("container")) {
    ReadContainer(e.at("container").value, KeyPath(path, "container"), &p.container, errors);
  }
  return p;
}

bool HostKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-'; }

}  // namespace

absl::StatusOr<SshHost> ParseSshHost(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError("'" + std::string(text) +
                                      "' is not user@host[:port]: " + why);
  };
  SshHost h;
  h.text = std::string(text);
  std::string_view rest = text;
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    h.user = std::string(rest.substr(0, at));
    rest.remove_prefix(at + 1);
    if (h.user.empty() || !std::all_of(h.user.begin(), h.user.end(), [](char c) {
          return HostKeyChar(c) || c == '_';
        })) {
      return bad("the user must be letters, digits, '.', '_' or '-'");
    }
  }
  std::string_view port;
  if (rest.starts_with("[")) {  // [IPv6]:port
    size_t end = rest.find(']');
    if (end == std::string_view::npos) return bad("an IPv6 address needs its closing ']'");
    h.host = std::string(rest.substr(1, end - 1));
    if (h.host.empty() || !std::all_of(h.host.begin(), h.host.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
        })) {
      return bad("'" + h.host + "' is not an IPv6 address");
    }
    rest.remove_prefix(end + 1);
    if (!rest.empty() && !rest.starts_with(":")) return bad("after ']' only :PORT may follow");
    if (!rest.empty()) port = rest.substr(1);
  } else {
    size_t colon = rest.find(':');
    h.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
    if (h.host.empty() || h.host.front() == '-' ||
        !std::all_of(h.host.begin(), h.host.end(), HostKeyChar)) {
      return bad("the host must be a name or address (letters, digits, '.' and '-'; IPv6 in "
                 "brackets)");
    }
  }
  if (!port.empty() || rest.ends_with(":")) {
    int value = 0;
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return bad("the port must be a number from 1 to 65535");
    }
    for (char c : port) value = value * 10 + (c - '0');
    if (value < 1 || value > 65535) return bad("the port must be a number from 1 to 65535");
    h.port = value;
  }
  h.key = h.host;
  for (char& c : h.key) {
    if (!HostKeyChar(c)) c = '-';
  }
  if (!h.user.empty()) h.key = h.user + "-at-" + h.key;
  if (h.port != 0) h.key += "-" + std::to_string(h.port);
  return h;
}

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
