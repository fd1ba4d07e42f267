// Script configs, command lines, run folders and the snapshot cache.
#include "worker/script_launch.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ablate/v1/types.pb.h"
#include "common/script_command.h"

namespace ablate::worker {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

absl::Status Bad(const std::string& what) {
  return absl::InvalidArgumentError("script config: " + what);
}

std::string StringField(const J& s, const char* key) {
  auto it = s.find(key);
  return it != s.end() && it->is_string() ? it->get<std::string>() : "";
}

// The run's args for {args}: each shell-quoted, space-separated.
std::string QuotedArgs(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) out += (out.empty() ? "" : " ") + ShellQuote(a);
  return out;
}

}  // namespace

bool IsScriptConfig(const std::string& config_json) {
  J config = J::parse(config_json, nullptr, false);
  return config.is_object() && config.contains("script");
}

absl::StatusOr<ScriptConfig> ParseScriptConfig(const std::string& config_json) {
  J config = J::parse(config_json, nullptr, false);
  if (!config.is_object() || !config.contains("script") || !config["script"].is_object()) {
    return Bad("no \"script\" object");
  }
  const J& s = config["script"];
  ScriptConfig c;
  c.path = StringField(s, "path");
  c.snapshot = StringField(s, "snapshot");
  c.launch = StringField(s, "launch");
  c.command = StringField(s, "command");
  c.data_link = StringField(s, "data_link");
  if (!CheckSnapshotPath(c.path).ok()) return Bad("bad path '" + c.path + "'");
  if (c.snapshot.size() != 64) return Bad("bad snapshot hash '" + c.snapshot + "'");
  if (!c.data_link.empty() && !CheckSnapshotPath(c.data_link).ok()) {
    return Bad("bad data_link '" + c.data_link + "'");
  }
  std::optional<LogFormat> format = ParseLogFormat(StringField(s, "log_format"));
  if (!format) return Bad("unknown log_format");
  c.log_format = *format;
  if (auto a = s.find("args"); a != s.end() && a->is_array()) {
    for (const J& arg : *a) {
      if (!arg.is_string()) return Bad("args must be strings");
      c.args.push_back(arg.get<std::string>());
    }
  }
  if (auto e = s.find("env"); e != s.end() && e->is_object()) {
    for (auto it = e->begin(); it != e->end(); ++it) {
      if (!it->is_string() || !EnvNameProblem(it.key()).empty()) return Bad("bad env " + it.key());
      c.env[it.key()] = it->get<std::string>();
    }
  }
  if (auto p = s.find("processes"); p != s.end()) {
    if (!p->is_number_integer() || p->get<int64_t>() < 1 || p->get<int64_t>() > 64) {
      return Bad("processes must be 1..64");
    }
    c.processes = p->get<int>();
  }
  if (auto t = config.find("target_val_loss"); t != config.end() && t->is_number()) {
    c.target_val_loss = t->get<double>();
  }
  if (auto seed = config.find("seed"); seed != config.end() && seed->is_number_integer()) {
    c.seed = seed->get<int64_t>();
  }
  return c;
}

absl::StatusOr<std::vector<std::string>> ScriptArgv(const ScriptConfig& c,
                                                    const LaunchContext& x) {
  std::vector<std::string> argv;
  if (c.launch == "python") {
    argv = {x.python, c.path};
  } else if (c.launch == "torchrun") {
    argv = {x.python, "-m", "torch.distributed.run", "--nproc_per_node",
            std::to_string(x.gpus > 0 ? x.gpus : c.processes)};
    // Always an explicit rendezvous: on one node too, a port the worker picked for this run.
    // torchrun's --standalone is no substitute: torch 1.13 (Debian 12's) puts every standalone
    // run on localhost:29400, so two gangs on one machine meet in one store and the second
    // fails when the first ends.
    argv.insert(argv.end(), {"--nnodes", std::to_string(x.nnodes), "--node_rank",
                             std::to_string(x.node_rank), "--master_addr", x.master_addr,
                             "--master_port", std::to_string(x.master_port)});
    // Each rank's stdout goes through torchrun's tee, "[default<local rank>]:"-prefixed (the
    // parser keeps rank 0's lines), with per-rank logs in the run folder; stderr passes
    // through. Also the only way Debian 12's torch 1.13 under Python 3.11 starts at all: its
    // default "--redirects 0" (and "3") fails to parse there, "1" does not.
    argv.insert(argv.end(), {"--redirects", "1", "--tee", "1", "--log_dir",
                             x.run_dir + "/torchrun-logs"});
    argv.push_back(c.path);
  } else if (c.launch == "command") {
    std::map<std::string, std::string> values = {
        {"python", x.python},
        {"script", c.path},
        {"gpus", std::to_string(x.gpus)},
        {"nnodes", std::to_string(x.nnodes)},
        {"node_rank", std::to_string(x.node_rank)},
        {"master_addr", x.master_addr},
        {"master_port", std::to_string(x.master_port)},
        {"seed", std::to_string(c.seed)},
        {"run_dir", x.run_dir},
        {"data_dir", x.data_dir},
        {"args", QuotedArgs(c.args)}};
    absl::StatusOr<std::string> command = ExpandCommand(c.command, values);
    if (!command.ok()) return command.status();
    return std::vector<std::string>{"/bin/sh", "-c", *command};
  } else {
    return Bad("unknown launch '" + c.launch + "'");
  }
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  return argv;
}

std::vector<std::string> ScriptEnv(const ScriptConfig& c, const LaunchContext& x) {
  std::vector<std::string> env;
  for (const auto& [name, value] : c.env) env.push_back(name + "=" + value);
  env.push_back("ABLATE_SEED=" + std::to_string(c.seed));
  env.push_back("ABLATE_RUN_ID=" + std::to_string(x.run_id));
  env.push_back("ABLATE_RUN_DIR=" + x.run_dir);
  env.push_back("ABLATE_DATA_DIR=" + x.data_dir);
  env.push_back("PYTHONUNBUFFERED=1");  // lines arrive as printed, not at exit
  return env;
}

absl::Status PrepareRunDir(const Snapshot& files, const ScriptConfig& c, const LaunchContext& x) {
  if (absl::Status s = WriteSnapshot(files, x.run_dir); !s.ok()) return s;
  if (c.data_link.empty()) return absl::OkStatus();
  fs::path link = fs::path(x.run_dir) / c.data_link;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  fs::remove(link, ec);  // a snapshot file or an old link of the same name gives way
  fs::create_directory_symlink(x.data_dir, link, ec);
  if (ec) return absl::InternalError("data_link " + link.string() + ": " + ec.message());
  return absl::OkStatus();
}

absl::StatusOr<int> PickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int e = errno;
    ::close(fd);
    return absl::InternalError(std::string("picking a port: ") + std::strerror(e));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

SnapshotCache::SnapshotCache(std::string dir, Fetch fetch)
    : dir_(std::move(dir)), fetch_(std::move(fetch)) {}

absl::StatusOr<Snapshot> SnapshotCache::Get(const std::string& hash, bool* fetched) {
  if (fetched) *fetched = false;
  if (!CheckSnapshotPath(hash).ok() || hash.size() != 64) {
    return absl::InvalidArgumentError("bad snapshot hash '" + hash + "'");
  }
  absl::MutexLock lock(&mu_);
  if (std::optional<Snapshot> cached = Load(hash)) return *std::move(cached);
  if (!fetch_) return absl::UnavailableError("snapshot " + hash + " is not cached here");
  absl::StatusOr<Snapshot> files = fetch_(hash);
  if (!files.ok()) return files.status();
  SortSnapshot(&*files);
  if (std::string got = SnapshotHash(*files); got != hash) {
    return absl::DataLossError("snapshot " + hash + " arrived with hash " + got);
  }
  if (absl::Status s = Store(hash, *files); !s.ok()) return s;
  if (fetched) *fetched = true;
  return files;
}

// A cached file that does not parse or hash right is ignored (and replaced by a fresh fetch).
std::optional<Snapshot> SnapshotCache::Load(const std::string& hash) {
  std::ifstream in(dir_ + "/" + hash + ".pb", std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream bytes;
  bytes << in.rdbuf();
  v1::CodeSnapshot proto;
  if (!proto.ParseFromString(bytes.str())) return std::nullopt;
  Snapshot files;
  for (const v1::SnapshotFile& f : proto.files()) {
    files.push_back({f.path(), f.content(), f.executable()});
  }
  SortSnapshot(&files);
  if (SnapshotHash(files) != hash) return std::nullopt;
  return files;
}

absl::Status SnapshotCache::Store(const std::string& hash, const Snapshot& files) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  v1::CodeSnapshot proto;
  proto.set_hash(hash);
  for (const SnapshotFile& f : files) {
    v1::SnapshotFile* p = proto.add_files();
    p->set_path(f.path);
    p->set_content(f.content);
    p->set_executable(f.executable);
  }
  const std::string tmp = dir_ + "/" + hash + ".pb.tmp", final_path = dir_ + "/" + hash + ".pb";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!proto.SerializeToOstream(&out)) {
      return absl::InternalError("cannot write the snapshot cache " + tmp);
    }
  }
  fs::rename(tmp, final_path, ec);
  if (ec) return absl::InternalError("cannot store " + final_path + ": " + ec.message());
  return absl::OkStatus();
}

}  // namespace ablate::worker
