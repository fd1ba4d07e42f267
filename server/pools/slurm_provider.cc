// Slurm pools: squeue -> fence -> sacct for what left -> scaler -> sbatch/scancel.
#include "server/pools/slurm_provider.h"

#include <iostream>

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

std::map<std::string, PoolConfig> ByName(std::vector<PoolConfig> pools) {
  std::map<std::string, PoolConfig> out;
  for (PoolConfig& p : pools) {
    std::string name = p.name;
    out[name] = std::move(p);
  }
  return out;
}

}  // namespace

SlurmProvider::SlurmProvider(std::vector<PoolConfig> pools, CommandRunner* slurm,
                             Dispatcher* dispatcher, SlurmProviderOptions options)
    : options_(std::move(options)),
      slurm_(slurm),
      dispatcher_(dispatcher),
      configs_(ByName(std::move(pools))) {
  absl::MutexLock lock(&mu_);
  for (const auto& [name, config] : configs_) pools_[name].config = config;
}

std::vector<std::string> SlurmProvider::pools() const {
  std::vector<std::string> out;
  for (const auto& [name, config] : configs_) out.push_back(name);
  return out;
}

CommandOutput SlurmProvider::Slurm(const std::vector<std::string>& argv) {
  {
    absl::MutexLock lock(&mu_);
    ++calls_;
  }
  return slurm_->Run(argv);
}

int64_t SlurmProvider::commands() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

void SlurmProvider::Poll(const std::map<std::string, PoolWant>& want, int64_t seen_ms) {
  std::optional<Pilots> pilots = ReadPilots();
  if (!pilots) return;  // squeue failed (logged): nothing is fenced
  for (const auto& [name, config] : configs_) Fence(name, pilots->by_pool[name], seen_ms);
  LogFinalStates(pilots->gone);
  std::string error;
  std::vector<int64_t> cancel;
  std::map<std::string, PoolState> next;
  for (const auto& [name, config] : configs_) {
    PoolState& st = next[name];
    st.config = config;
    std::map<int64_t, int> busy = dispatcher_->RunsByAllocation(name);
    for (const SlurmJob& j : pilots->by_pool[name]) {
      st.pilots.push_back({j, pilots->tags[j.id], busy[j.id]});
    }
    auto w = want.find(name);
    const PoolWant none;
    const PoolWant& mine = w == want.end() ? none : w->second;
    ScalerDecision d = ScalePool({config.gpus_per_node, config.worker.cpu_slots, config.max_nodes},
                                 mine.runs, HeldAllocations(pilots->by_pool[name]));
    st.wanted = d.wanted;
    st.unplaceable = d.unplaceable;
    st.waiting = PendingReason(name, st.pilots);
    if (std::string e = Apply(config, d, mine.sweep_hint, &cancel); !e.empty()) error = e;
  }
  if (!cancel.empty()) CancelPilots(cancel, &error);
  absl::MutexLock lock(&mu_);
  for (auto& [name, st] : next) pools_[name] = std::move(st);
  polled_ms_ = seen_ms;
  if (!error.empty() && error != error_) Log(error);
  error_ = error;
}

std::optional<SlurmProvider::Pilots> SlurmProvider::ReadPilots() {
  CommandOutput q = Slurm(SqueueArgs(PilotJobName(options_.coordinator_id)));
  absl::StatusOr<std::vector<SlurmJob>> jobs =
      q.exit_code == 0 ? ParseSqueue(q.out)
                       : absl::StatusOr<std::vector<SlurmJob>>(
                             absl::UnavailableError(Failure("squeue", q)));
  absl::MutexLock lock(&mu_);
  if (!jobs.ok()) {
    // Nothing is fenced on a failed poll: an unreachable controller says nothing about the jobs.
    if (error_ != jobs.status().message()) Log(std::string(jobs.status().message()));
    error_ = std::string(jobs.status().message());
    return std::nullopt;
  }
  Pilots p;
  std::set<int64_t> current;
  for (const SlurmJob& j : *jobs) {
    std::optional<PilotTag> tag = ParsePilotTag(j.comment);
    if (!tag || tag->coordinator != options_.coordinator_id || !configs_.count(tag->pool)) continue;
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

void SlurmProvider::CancelPilots(const std::vector<int64_t>& cancel, std::string* error) {
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

void SlurmProvider::Fence(const std::string& pool, const std::vector<SlurmJob>& jobs,
                          int64_t seen_ms) {
  std::map<int64_t, Dispatcher::RunningAllocation> running;
  for (const SlurmJob& j : jobs) {
    if (!j.running()) continue;
    running[j.id] = {j.restart_count, j.time_left_s ? seen_ms + *j.time_left_s * 1000 : 0};
  }
  dispatcher_->FenceAllocations(pool, running, seen_ms,
                                "its Slurm allocation is no longer running (squeue)");
}

void SlurmProvider::LogFinalStates(const std::set<int64_t>& gone) {
  {
    absl::MutexLock lock(&mu_);
    if (gone.empty() || !accounting_) return;
  }
  CommandOutput out = Slurm(SacctArgs({gone.begin(), gone.end()}));
  if (out.exit_code != 0) {
    if (AccountingDisabled(out.err)) {
      Log("the cluster keeps no accounting: pilots that leave the queue are taken as ended");
      absl::MutexLock lock(&mu_);
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

std::string SlurmProvider::Apply(const PoolConfig& config, const ScalerDecision& d,
                                 int64_t sweep_hint, std::vector<int64_t>* cancel) {
  cancel->insert(cancel->end(), d.cancel.begin(), d.cancel.end());
  for (const auto& [nodes, count] : d.submit) {
    for (int i = 0; i < count; ++i) {
      PilotTag tag{options_.coordinator_id, config.name, nodes, sweep_hint};
      CommandOutput out = Slurm(PilotSbatchArgs(config, tag, options_.coordinator_address));
      absl::StatusOr<int64_t> id =
          out.exit_code == 0 ? ParseSbatchJobId(out.out)
                             : absl::StatusOr<int64_t>(absl::UnavailableError(Failure("sbatch", out)));
      if (!id.ok()) return std::string(id.status().message());
      Log("submitted pilot job " + std::to_string(*id) + " to pool '" + config.name + "' (" +
          std::to_string(nodes) + " node(s), partition " + config.partition + ")");
    }
  }
  return "";
}

absl::Status SlurmProvider::CheckShape(const PoolConfig& config, int nodes, int gpus_per_run) {
  CommandOutput test = Slurm(PilotTestArgs(config, nodes));
  if (test.exit_code != 0) {
    return absl::InvalidArgumentError("pool: Slurm will never run runs of " +
                                      std::to_string(gpus_per_run) + " GPUs (" +
                                      std::to_string(nodes) + " node(s) of partition " +
                                      config.partition + "): " + Trimmed(test.err));
  }
  return absl::OkStatus();
}

std::vector<PoolStatus> SlurmProvider::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<PoolStatus> out;
  for (const auto& [name, p] : pools_) {
    PoolStatus s;
    s.config = p.config;
    s.pilots = p.pilots;
    s.wanted = p.wanted;
    s.polled_ms = polled_ms_;
    s.error = error_;
    out.push_back(std::move(s));
  }
  return out;
}

std::string SlurmProvider::Waiting(const std::string& pool) const {
  absl::MutexLock lock(&mu_);
  auto it = pools_.find(pool);
  return it == pools_.end() ? "" : it->second.waiting;
}

}  // namespace ablate
