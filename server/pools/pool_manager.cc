// The pools loop: squeue -> fence -> sacct for what left -> demand -> scaler -> sbatch/scancel.
#include "server/pools/pool_manager.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "common/clock.h"
#include "server/pools/pilot_job.h"

namespace ablate {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// "sbatch failed (exit 1): sbatch: error: ..."
std::string Failure(const std::string& what, const CommandOutput& out) {
  return what + " failed (exit " + std::to_string(out.exit_code) + "): " +
         Trimmed(out.err.empty() ? out.out : out.err);
}

void Log(const std::string& line) { std::cerr << "ablate-coordinator: pools: " << line << std::endl; }

// Why a pool's queued runs wait on Slurm, from its pending pilots ("" when none is pending).
std::string PendingReason(const std::string& pool, const std::vector<PilotStatus>& pilots) {
  std::string jobs;
  int n = 0;
  for (const PilotStatus& p : pilots) {
    if (!p.job.pending()) continue;
    if (++n <= 3) {
      jobs += (jobs.empty() ? "" : ", ") + std::string("job ") + std::to_string(p.job.id) + " (" +
              p.job.reason + ")";
    }
  }
  if (n == 0) return "";
  return "waiting for Slurm: pool '" + pool + "' has " + std::to_string(n) +
         " pending allocation(s): " + jobs + (n > 3 ? ", ..." : "");
}

}  // namespace

PoolManager::PoolManager(std::vector<PoolConfig> pools, CommandRunner* slurm, Store* store,
                         Dispatcher* dispatcher, PoolManagerOptions options)
    : options_(std::move(options)), slurm_(slurm), store_(store), dispatcher_(dispatcher) {
  for (PoolConfig& p : pools) {
    std::string name = p.name;
    pools_[name].config = std::move(p);
  }
}

PoolManager::~PoolManager() { Stop(); }

void PoolManager::Start() {
  std::vector<std::string> work_dirs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, p] : pools_) work_dirs.push_back(p.config.worker.work_dir);
  }
  for (const std::string& dir : work_dirs) {
    // Where sbatch writes the pilots' output; on a cluster usually a shared file system.
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  loop_ = std::thread([this] { Loop(); });
}

void PoolManager::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
}

void PoolManager::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

void PoolManager::Loop() {
  const auto poll = std::chrono::milliseconds(options_.poll_ms);
  const auto min_poll = std::chrono::milliseconds(std::min(options_.min_poll_ms, options_.poll_ms));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const auto polled = std::chrono::steady_clock::now();
    lock.unlock();
    PollOnce();
    lock.lock();
    cv_.wait_until(lock, polled + poll, [this] { return stop_ || kicked_; });
    // Rate limit: a burst of submissions costs one squeue, not one each.
    cv_.wait_until(lock, polled + min_poll, [this] { return stop_; });
    kicked_ = false;
  }
}

CommandOutput PoolManager::Slurm(const std::vector<std::string>& argv) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
  }
  return slurm_->Run(argv);
}

int64_t PoolManager::slurm_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void PoolManager::PollOnce() {
  const int64_t seen_ms = options_.clock ? options_.clock() : SystemClock::Get().WallMs();
  std::optional<Pilots> pilots = ReadPilots();
  if (!pilots) return;  // squeue failed (logged): nothing is fenced
  for (const auto& [name, config] : pilots->configs) {
    Fence(name, pilots->by_pool[name], seen_ms);
  }
  LogFinalStates(pilots->gone);
  std::string error;
  std::map<int64_t, std::string> queued_pool;
  std::vector<int64_t> cancel;
  std::map<std::string, PoolState> next = Scale(*pilots, &queued_pool, &cancel, &error);
  if (!cancel.empty()) CancelPilots(cancel, &error);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, st] : next) pools_[name] = std::move(st);
  queued_pool_ = std::move(queued_pool);
  polled_ms_ = seen_ms;
  if (!error.empty() && error != error_) Log(error);
  error_ = error;
}

std::optional<PoolManager::Pilots> PoolManager::ReadPilots() {
  CommandOutput q = Slurm(SqueueArgs(PilotJobName(options_.coordinator_id)));
  absl::StatusOr<std::vector<SlurmJob>> jobs =
      q.exit_code == 0 ? ParseSqueue(q.out)
                       : absl::StatusOr<std::vector<SlurmJob>>(
                             absl::UnavailableError(Failure("squeue", q)));
  std::lock_guard<std::mutex> lock(mu_);
  if (!jobs.ok()) {
    // Nothing is fenced on a failed poll: an unreachable controller says nothing about the jobs.
    if (error_ != jobs.status().message()) Log(std::string(jobs.status().message()));
    error_ = std::string(jobs.status().message());
    return std::nullopt;
  }
  Pilots p;
  std::set<int64_t> current;
  for (const auto& [name, pool] : pools_) p.configs[name] = pool.config;
  for (const SlurmJob& j : *jobs) {
    std::optional<PilotTag> tag = ParsePilotTag(j.comment);
    if (!tag || tag->coordinator != options_.coordinator_id || !pools_.count(tag->pool)) continue;
    p.by_pool[tag->pool].push_back(j);
    p.tags[j.id] = *tag;
    current.insert(j.id);
  }
  for (int64_t id : known_jobs_) {
    if (!current.count(id)) p.gone.insert(id);
  }
  known_jobs_ = current;
  return p;
}

std::map<std::string, PoolManager::PoolState> PoolManager::Scale(
    Pilots& pilots, std::map<int64_t, std::string>* queued_pool, std::vector<int64_t>* cancel,
    std::string* error) {
  std::map<std::string, std::vector<int>> runs;
  if (absl::Status s = Demand(&runs, queued_pool); !s.ok()) {
    *error = "reading the queue: " + std::string(s.message());
  }
  std::map<std::string, int64_t> sweep_hint;
  for (const auto& [run_id, pool] : *queued_pool) {
    // The oldest sweep with queued runs names the pilots it asks for (their comment).
    absl::StatusOr<Run> r = store_->GetRun(run_id);
    if (r.ok() && !sweep_hint.count(pool)) sweep_hint[pool] = r->sweep_id;
  }
  std::map<std::string, PoolState> next;
  for (const auto& [name, config] : pilots.configs) {
    PoolState& st = next[name];
    st.config = config;
    std::map<int64_t, int> busy = dispatcher_->RunsByAllocation(name);
    for (const SlurmJob& j : pilots.by_pool[name]) {
      st.pilots.push_back({j, pilots.tags[j.id], busy[j.id]});
    }
    ScalerDecision d = ScalePool({config.gpus_per_node, config.worker.cpu_slots, config.max_nodes},
                                 runs[name], HeldAllocations(pilots.by_pool[name]));
    st.wanted = d.wanted;
    st.unplaceable = d.unplaceable;
    st.waiting = PendingReason(name, st.pilots);
    if (std::string e = Apply(st, d, sweep_hint[name], cancel); !e.empty()) *error = e;
  }
  return next;
}

void PoolManager::CancelPilots(const std::vector<int64_t>& cancel, std::string* error) {
  std::vector<std::string> argv = {"scancel"};
  std::string ids;
  for (int64_t id : cancel) {
    argv.push_back(std::to_string(id));
    ids += " " + std::to_string(id);
  }
  CommandOutput c = Slurm(argv);
  if (c.exit_code != 0) *error = Failure("scancel", c);
  Log("cancelled pending pilot(s) no run needs any more:" + ids);
}

void PoolManager::Fence(const std::string& pool, const std::vector<SlurmJob>& jobs,
                        int64_t seen_ms) {
  std::map<int64_t, Dispatcher::RunningAllocation> running;
  for (const SlurmJob& j : jobs) {
    if (!j.running()) continue;
    running[j.id] = {j.restart_count, j.time_left_s ? seen_ms + *j.time_left_s * 1000 : 0};
  }
  dispatcher_->FenceAllocations(pool, running, seen_ms,
                                "its Slurm allocation is no longer running (squeue)");
}

void PoolManager::LogFinalStates(const std::set<int64_t>& gone) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gone.empty() || !accounting_) return;
  }
  CommandOutput out = Slurm(SacctArgs({gone.begin(), gone.end()}));
  if (out.exit_code != 0) {
    if (AccountingDisabled(out.err)) {
      Log("the cluster keeps no accounting: pilots that leave the queue are taken as ended");
      std::lock_guard<std::mutex> lock(mu_);
      accounting_ = false;
    } else {
      Log(Failure("sacct", out));
    }
    return;
  }
  absl::StatusOr<std::map<int64_t, std::string>> states = ParseSacct(out.out);
  if (!states.ok()) return Log(std::string(states.status().message()));
  for (const auto& [id, state] : *states) Log("pilot job " + std::to_string(id) + " ended: " + state);
}

absl::Status PoolManager::Demand(std::map<std::string, std::vector<int>>* runs,
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
      if (state == RunState::kQueued) (*queued_pool)[r.id] = it->second->pool;
    }
  }
  for (const auto& [sweep_id, n] : wanting) {
    const Sweep& sw = *sweeps.at(sweep_id);
    int count = sw.max_concurrent > 0 ? std::min(n, sw.max_concurrent) : n;
    for (int i = 0; i < count; ++i) (*runs)[sw.pool].push_back(sw.gpus_per_run);
  }
  return absl::OkStatus();
}

std::string PoolManager::Apply(const PoolState& pool, const ScalerDecision& d, int64_t sweep_hint,
                               std::vector<int64_t>* cancel) {
  cancel->insert(cancel->end(), d.cancel.begin(), d.cancel.end());
  for (const auto& [nodes, count] : d.submit) {
    for (int i = 0; i < count; ++i) {
      PilotTag tag{options_.coordinator_id, pool.config.name, nodes, sweep_hint};
      CommandOutput out =
          Slurm(PilotSbatchArgs(pool.config, tag, options_.coordinator_address));
      absl::StatusOr<int64_t> id =
          out.exit_code == 0 ? ParseSbatchJobId(out.out)
                             : absl::StatusOr<int64_t>(absl::UnavailableError(Failure("sbatch", out)));
      if (!id.ok()) return std::string(id.status().message());
      Log("submitted pilot job " + std::to_string(*id) + " to pool '" + pool.config.name + "' (" +
          std::to_string(nodes) + " node(s), partition " + pool.config.partition + ")");
    }
  }
  return "";
}

absl::Status PoolManager::CheckSweep(const Sweep& sweep, bool runs_scripts) {
  if (sweep.pool.empty()) return absl::OkStatus();
  PoolConfig config;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pools_.find(sweep.pool);
    if (it == pools_.end()) {
      std::string names;
      for (const auto& [name, p] : pools_) names += (names.empty() ? "" : ", ") + name;
      return absl::InvalidArgumentError("pool: '" + sweep.pool +
                                        "' is not a pool of this coordinator (its pools: " +
                                        (names.empty() ? "none" : names) + ")");
    }
    config = it->second.config;
  }
  const std::vector<std::string>& args = config.worker.args;
  if (runs_scripts && std::find(args.begin(), args.end(), "--allow-scripts") == args.end()) {
    return absl::InvalidArgumentError(
        "pool: '" + config.name +
        "': its pilots run no scripts and this sweep runs one; add --allow-scripts to the "
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
                                      std::to_string(config.max_nodes) + " (max_nodes)");
  }
  CommandOutput test = Slurm(PilotTestArgs(config, nodes));
  if (test.exit_code != 0) {
    return absl::InvalidArgumentError(
        "pool: Slurm will never run " + runs + " (" + std::to_string(nodes) +
        " node(s) of partition " + config.partition + "): " + Trimmed(test.err));
  }
  return absl::OkStatus();
}

std::vector<PoolStatus> PoolManager::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PoolStatus> out;
  for (const auto& [name, p] : pools_) {
    out.push_back({p.config, p.pilots, p.wanted, polled_ms_, error_});
  }
  return out;
}

void PoolManager::AddWaitingReasons(std::map<int64_t, std::string>* by_run) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [run_id, pool] : queued_pool_) {
    auto it = pools_.find(pool);
    if (it == pools_.end() || it->second.waiting.empty()) continue;
    auto mine = by_run->find(run_id);
    // The dispatcher's own reasons (max_concurrent, a dataset) stay; "no worker" becomes Slurm's.
    if (mine == by_run->end() || mine->second.starts_with("no worker of pool")) {
      (*by_run)[run_id] = it->second.waiting;
    }
  }
}

}  // namespace ablate
