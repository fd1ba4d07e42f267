// --pools for ablate-coordinator.
#include "server/pools/pools_setup.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ablate {

absl::StatusOr<std::vector<PoolConfig>> ReadPoolsFile(const std::string& path) {
  if (path.empty()) return std::vector<PoolConfig>{};
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read --pools file " + path);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<PoolConfig>> pools = ParsePoolsConfig(text.str(), path);
  if (!pools.ok()) return pools;
  // An ssh pool's coordinator-side files are relative to the pools file, wherever the
  // coordinator was started.
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::absolute(path, ec).parent_path();
  for (PoolConfig& p : *pools) {
    if (p.kind != PoolKind::kSsh) continue;
    const char* home = std::getenv("HOME");
    for (std::string* f : {&p.ssh.bundle, &p.ssh.identity_file, &p.ssh.known_hosts}) {
      if (f->starts_with("~/") && home && *home) *f = std::string(home) + f->substr(1);
      if (!f->empty() && (*f)[0] != '/') *f = (dir / *f).lexically_normal().string();
    }
    if (std::ifstream bundle(p.ssh.bundle); !bundle) {
      return absl::InvalidArgumentError("--pools file " + path + ": pool '" + p.name +
                                        "': bundle " + p.ssh.bundle +
                                        " cannot be read (make it with ./dev.sh dist)");
    }
  }
  return pools;
}

std::string DefaultCoordinatorId(const std::string& data_dir) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::error_code ec;
  std::string key = std::string(host) + ":" + std::filesystem::absolute(data_dir, ec).string();
  uint32_t h = 2166136261u;  // FNV-1a: the same on every build, unlike std::hash
  for (unsigned char c : key) h = (h ^ c) * 16777619u;
  char out[9];
  std::snprintf(out, sizeof out, "%08x", h);
  return out;
}

std::string PilotCoordinatorAddress(const std::string& advertise, const std::string& listen,
                                    int bound_port) {
  if (!advertise.empty()) return advertise;
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host == "0.0.0.0" || host == "[::]" || host.empty()) {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    host = name;
  }
  return host + ":" + std::to_string(bound_port);
}

v1::Pool PoolToProto(const PoolStatus& s) {
  v1::Pool p;
  p.set_name(s.config.name);
  p.set_partition(s.config.partition);
  p.set_account(s.config.account);
  p.set_gpus_per_node(s.config.gpus_per_node);
  p.set_max_nodes(s.config.max_nodes);
  p.set_polled_ms(s.polled_ms);
  p.set_error(s.error);
  for (const auto& [nodes, count] : s.wanted) (*p.mutable_wanted())[nodes] = count;
  p.set_kind(s.config.kind == PoolKind::kSsh ? "ssh" : "slurm");
  for (const SshHostStatus& h : s.hosts) {
    v1::PoolHost* out = p.add_hosts();
    out->set_host(h.host);
    out->set_state(h.state);
    out->set_incarnation(h.incarnation);
    out->set_runs(h.runs);
    out->set_connected(h.connected);
    out->set_error(h.error);
    out->set_since_ms(h.since_ms);
    out->set_retry_ms(h.retry_ms);
    out->set_last_start_ms(h.last_start_ms);
    out->set_last_start_copied(h.last_start_copied);
    out->set_started_as(h.started_as);
    out->set_worker_id("ssh/" + s.config.name + "/" + h.key);
  }
  for (const PilotStatus& pilot : s.pilots) {
    v1::PoolAllocation* a = p.add_allocations();
    a->set_job_id(pilot.job.id);
    a->set_state(pilot.job.state);
    a->set_reason(pilot.job.reason);
    a->set_nodes(pilot.job.nodes);
    a->set_node_list(pilot.job.node_list);
    a->set_time_left_s(pilot.job.time_left_s.value_or(-1));
    a->set_runs(pilot.runs);
    a->set_restart_count(pilot.job.restart_count);
    a->set_sweep_id(pilot.tag.sweep_id);
  }
  return p;
}

void AddPoolHooks(const std::unique_ptr<PoolManager>* manager, bool pools_configured,
                  ServiceHooks* hooks) {
  hooks->check_sweep = [manager, pools_configured](const Sweep& sweep, bool runs_scripts) {
    if (sweep.pool.empty()) return absl::OkStatus();
    if (!pools_configured) {
      return absl::InvalidArgumentError("pool: '" + sweep.pool +
                                        "': this coordinator has no pools (ablate-coordinator "
                                        "--pools FILE)");
    }
    if (!*manager) return absl::UnavailableError("the coordinator's pools are starting; retry");
    return (*manager)->CheckSweep(sweep, runs_scripts);
  };
  auto submitted = hooks->on_submit;
  hooks->on_submit = [manager, submitted] {
    if (submitted) submitted();
    if (*manager) (*manager)->Kick();
  };
  hooks->list_pools = [manager] {
    std::vector<v1::Pool> out;
    if (*manager) {
      for (const PoolStatus& s : (*manager)->Snapshot()) out.push_back(PoolToProto(s));
    }
    return out;
  };
  hooks->pool_action = [manager](const std::string& pool, const std::string& host,
                                 const std::string& action) -> absl::StatusOr<std::string> {
    if (!*manager) return absl::UnavailableError("the coordinator's pools are starting; retry");
    return (*manager)->Act(pool, host, action);
  };
  auto waiting = hooks->waiting_reasons;
  hooks->waiting_reasons = [manager, waiting] {
    std::map<int64_t, std::string> reasons = waiting ? waiting() : std::map<int64_t, std::string>{};
    if (*manager) (*manager)->AddWaitingReasons(&reasons);
    return reasons;
  };
}

}  // namespace ablate
