// The pools' loops: per provider, demand from the store -> the provider's pass.
#include "server/pools/pool_manager.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "server/pools/scaler.h"
#include "server/pools/slurm_provider.h"
#include "server/pools/ssh_provider.h"

namespace ablate {

PoolManager::PoolManager(std::vector<PoolConfig> pools, CommandRunner* slurm, Store* store,
                         Dispatcher* dispatcher, PoolManagerOptions options)
    : options_(std::move(options)), store_(store), dispatcher_(dispatcher) {
  std::vector<PoolConfig> slurm_pools;
  for (PoolConfig& p : pools) {
    configs_[p.name] = p;
    if (p.kind == PoolKind::kSlurm) {
      slurm_pools.push_back(std::move(p));
      continue;
    }
    if (control_dir_.empty()) {
      control_dir_ = options_.ssh_control_dir;
      if (control_dir_.empty()) {
        char tmpl[] = "/tmp/ablate-ssh-XXXXXX";
        if (char* made = ::mkdtemp(tmpl)) control_dir_ = made;
      }
    }
    SshProviderOptions o;
    o.coordinator_address = options_.coordinator_address;
    o.control_dir = control_dir_;
    o.poll_ms = options_.ssh_poll_ms;
    auto loop = std::make_unique<ProviderLoop>();
    loop->provider = std::make_unique<SshProvider>(std::move(p), dispatcher, o);
    loops_.push_back(std::move(loop));
  }
  if (!slurm_pools.empty()) {
    SlurmProviderOptions o;
    o.coordinator_id = options_.coordinator_id;
    o.coordinator_address = options_.coordinator_address;
    o.poll_ms = options_.poll_ms;
    o.min_poll_ms = std::min(options_.min_poll_ms, options_.poll_ms);
    auto loop = std::make_unique<ProviderLoop>();
    loop->provider =
        std::make_unique<SlurmProvider>(std::move(slurm_pools), slurm, dispatcher, o);
    loop->slurm = true;
    loops_.push_back(std::move(loop));
  }
  for (const auto& loop : loops_) {
    for (const std::string& name : loop->provider->pools()) by_pool_[name] = loop->provider.get();
  }
}

PoolManager::~PoolManager() {
  Stop();
  loops_.clear();  // the providers close their connections
  if (!control_dir_.empty() && options_.ssh_control_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(control_dir_, ec);
  }
}

void PoolManager::Start() {
  for (const auto& [name, config] : configs_) {
    if (config.kind != PoolKind::kSlurm) continue;
    // Where sbatch writes the pilots' output; on a cluster usually a shared file system.
    std::error_code ec;
    std::filesystem::create_directories(config.worker.work_dir, ec);
  }
  for (const auto& loop : loops_) {
    ProviderLoop* l = loop.get();
    l->thread = std::thread([this, l] { Loop(l); });
  }
}

void PoolManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (const auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
}

void PoolManager::Kick() {
  absl::MutexLock lock(&mu_);
  for (const auto& loop : loops_) loop->kicked = true;
}

void PoolManager::Loop(ProviderLoop* loop) {
  PoolProvider& p = *loop->provider;
  const absl::Duration poll = absl::Milliseconds(p.poll_ms());
  const absl::Duration min_poll = absl::Milliseconds(std::min(p.min_poll_ms(), p.poll_ms()));
  auto woken = [this, loop]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || loop->kicked; };
  mu_.Lock();
  while (!stop_) {
    const absl::Time polled = absl::Now();
    loop->kicked = false;
    mu_.Unlock();
    PollProvider(p);
    mu_.Lock();
    mu_.AwaitWithDeadline(absl::Condition(&woken), polled + poll);
    // Rate limit (Slurm): a burst of submissions costs one squeue, not one each.
    if (min_poll > absl::ZeroDuration()) {
      mu_.AwaitWithDeadline(absl::Condition(&stop_), polled + min_poll);
    }
  }
  mu_.Unlock();
}

void PoolManager::PollOnce() {
  for (const auto& loop : loops_) PollProvider(*loop->provider);
}

void PoolManager::PollProvider(PoolProvider& provider) {
  const int64_t seen_ms = options_.clock->WallMs();
  std::map<std::string, PoolWant> want;
  std::map<int64_t, std::string> queued_pool;
  if (absl::Status s = Demand(&want, &queued_pool); !s.ok()) {
    std::cerr << "ablate-coordinator: pools: reading the queue: " << s.message() << std::endl;
  }
  provider.Poll(want, seen_ms);
  absl::MutexLock lock(&mu_);
  // Each loop replaces its own pools' entries only.
  const std::vector<std::string> mine = provider.pools();
  for (auto it = queued_pool_.begin(); it != queued_pool_.end();) {
    if (std::find(mine.begin(), mine.end(), it->second) != mine.end()) {
      it = queued_pool_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [run, pool] : queued_pool) {
    if (std::find(mine.begin(), mine.end(), pool) != mine.end()) queued_pool_[run] = pool;
  }
}

int64_t PoolManager::slurm_calls() const {
  for (const auto& loop : loops_) {
    if (loop->slurm) return loop->provider->commands();
  }
  return 0;
}

absl::Status PoolManager::Demand(std::map<std::string, PoolWant>* want,
                                 std::map<int64_t, std::string>* queued_pool) {
  std::map<int64_t, absl::StatusOr<Sweep>> sweeps;
  std::map<int64_t, int> wanting;  // sweep -> runs that want to run now
  for (RunState state : {RunState::kQueued, RunState::kAssigned, RunState::kRunning}) {
    RunFilter filter;
    filter.state = state;
    absl::StatusOr<std::vector<Run>> list = store_->ListRuns(filter);
    if (!list.ok()) return list.status();
    for (const Run& r : *list) {
      auto it = sweeps.find(r.sweep_id);
      if (it == sweeps.end()) it = sweeps.emplace(r.sweep_id, store_->GetSweep(r.sweep_id)).first;
      if (!it->second.ok() || it->second->pool.empty()) continue;
      ++wanting[r.sweep_id];
      if (state == RunState::kQueued) {
        (*queued_pool)[r.id] = it->second->pool;
        // The oldest sweep with queued runs names the pilots it asks for (their comment).
        int64_t& hint = (*want)[it->second->pool].sweep_hint;
        if (hint == 0 || r.sweep_id < hint) hint = r.sweep_id;
      }
    }
  }
  for (const auto& [sweep_id, n] : wanting) {
    const Sweep& sw = *sweeps.at(sweep_id);
    int count = sw.max_concurrent > 0 ? std::min(n, sw.max_concurrent) : n;
    for (int i = 0; i < count; ++i) (*want)[sw.pool].runs.push_back(sw.gpus_per_run);
  }
  return absl::OkStatus();
}

absl::Status PoolManager::CheckSweep(const Sweep& sweep, bool runs_scripts) {
  if (sweep.pool.empty()) return absl::OkStatus();
  auto it = configs_.find(sweep.pool);
  if (it == configs_.end()) {
    std::string names;
    for (const auto& [name, p] : configs_) names += (names.empty() ? "" : ", ") + name;
    return absl::InvalidArgumentError("pool: '" + sweep.pool +
                                      "' is not a pool of this coordinator (its pools: " +
                                      (names.empty() ? "none" : names) + ")");
  }
  const PoolConfig& config = it->second;
  const std::vector<std::string>& args = config.worker.args;
  if (runs_scripts && std::find(args.begin(), args.end(), "--allow-scripts") == args.end()) {
    return absl::InvalidArgumentError(
        "pool: '" + config.name + "': its " +
        (config.kind == PoolKind::kSsh ? "workers" : "pilots") +
        " run no scripts and this sweep runs one; add --allow-scripts to the "
        "pool's worker.args (worker: {args: [--allow-scripts]}) where everyone who may submit "
        "may run code on its nodes");
  }
  const std::string runs = "runs of " + std::to_string(sweep.gpus_per_run) + " GPUs";
  const int nodes = NodesPerRun({config.gpus_per_node, config.worker.cpu_slots, config.max_nodes},
                                sweep.gpus_per_run);
  if (nodes == 0) {
    return absl::InvalidArgumentError(
        "pool: '" + config.name + "' has " + std::to_string(config.gpus_per_node) +
        " GPUs and " + std::to_string(config.worker.cpu_slots) +
        " CPU slots per node: " + runs + " need a whole number of its nodes");
  }
  if (nodes > config.max_nodes) {
    return absl::InvalidArgumentError("pool: " + runs + " need " + std::to_string(nodes) +
                                      " nodes; pool '" + config.name + "' holds at most " +
                                      std::to_string(config.max_nodes) +
                                      (config.kind == PoolKind::kSsh ? " (its hosts)"
                                                                     : " (max_nodes)"));
  }
  return by_pool_.at(config.name)->CheckShape(config, nodes, sweep.gpus_per_run);
}

absl::StatusOr<std::string> PoolManager::Act(const std::string& pool, const std::string& host,
                                             const std::string& action) {
  auto it = by_pool_.find(pool);
  if (it == by_pool_.end()) {
    std::string names;
    for (const auto& [name, p] : configs_) names += (names.empty() ? "" : ", ") + name;
    return absl::NotFoundError("'" + pool + "' is not a pool of this coordinator (its pools: " +
                               (names.empty() ? "none" : names) + ")");
  }
  absl::StatusOr<std::string> done = it->second->Act(pool, host, action);
  if (done.ok()) Kick();
  return done;
}

std::vector<PoolStatus> PoolManager::Snapshot() const {
  std::map<std::string, PoolStatus> by_name;
  for (const auto& loop : loops_) {
    for (PoolStatus& s : loop->provider->Snapshot()) {
      std::string name = s.config.name;
      by_name[name] = std::move(s);
    }
  }
  std::vector<PoolStatus> out;
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  return out;
}

void PoolManager::AddWaitingReasons(std::map<int64_t, std::string>* by_run) const {
  std::map<int64_t, std::string> queued;
  {
    absl::MutexLock lock(&mu_);
    queued = queued_pool_;
  }
  std::map<std::string, std::string> waiting;
  for (const auto& [name, provider] : by_pool_) waiting[name] = provider->Waiting(name);
  for (const auto& [run_id, pool] : queued) {
    auto it = waiting.find(pool);
    if (it == waiting.end() || it->second.empty()) continue;
    auto mine = by_run->find(run_id);
    // The dispatcher's own reasons (max_concurrent, a dataset) stay; "no worker" becomes the
    // pool's.
    if (mine == by_run->end() || mine->second.starts_with("no worker of pool")) {
      (*by_run)[run_id] = it->second;
    }
  }
}

}  // namespace ablate
