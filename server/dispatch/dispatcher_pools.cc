// The dispatcher's side of pools (issue 15): workers that give their attempts back (Release),
// drain, or lose their Slurm allocation; and how long a run should take, so that it does not
// start in an allocation that ends first. The rest of the dispatcher is dispatcher.cc.
#include <iostream>

#include <algorithm>
#include <climits>

#include "server/core/slurm_worker_id.h"
#include "server/core/ssh_worker_id.h"
#include "server/dispatch/dispatcher.h"

namespace ablate {

void Dispatcher::NoteSlurm(const v1::Hello& hello, int64_t now, WorkerState* w) {
  w->registered_ms = now;
  w->draining = false;
  w->fenced = false;
  w->pool.clear();
  w->allocation.clear();
  w->slurm_job_id = 0;
  w->slurm_step.clear();
  w->ssh = hello.has_ssh();
  if (hello.has_ssh()) {
    // One host of an ssh pool is one allocation; each start on it, one incarnation.
    w->pool = hello.ssh().pool();
    w->slurm_job_id = SshAllocationId(hello.ssh().host());
    w->slurm_restart = static_cast<int>(std::min<int64_t>(hello.ssh().incarnation(), INT32_MAX));
    w->allocation = SshWorkerId(hello.ssh().pool(), hello.ssh().host());
    return;
  }
  if (!hello.has_slurm()) return;
  const v1::SlurmAllocation& s = hello.slurm();
  w->pool = s.pool();
  w->slurm_job_id = s.job_id();
  w->slurm_restart = s.restart_count();
  w->slurm_step = s.step_id();
  w->allocation = SlurmWorkerRef{s.cluster(), s.job_id(), s.restart_count(), 0}.allocation();
  if (s.end_time_ms() > 0) w->ends_ms = s.end_time_ms();
}

void Dispatcher::ReleaseAttempts(
    const std::vector<std::pair<std::string, int64_t>>& worker_attempts, const std::string& why) {
  for (const auto& [worker_id, attempt_id] : worker_attempts) {
    const GangNode node = NodeOf(worker_id, attempt_id);
    RetireShare(worker_id, attempt_id);
    absl::Status s = store_->LoseAttempt(attempt_id, why).status();
    std::cerr << "ablate-coordinator: attempt " << attempt_id << " of worker " << worker_id
              << " released (" << why << "); run requeued, not charged"
              << (s.ok() ? "" : std::string(": ") + std::string(s.message())) << std::endl;
    CancelOtherNodes(attempt_id, worker_id,
                     (node.in_gang() ? "node " + std::to_string(node.rank) + " of " +
                                           std::to_string(node.num_nodes) + " (worker " +
                                           worker_id + ") "
                                     : "worker " + worker_id + " ") +
                         "released the attempt: " + why);
  }
  if (!worker_attempts.empty()) {
    feed_->Notify();
    Kick();
  }
}

void Dispatcher::OnRelease(const std::string& worker_id, const v1::Release& msg) {
  OnHeartbeat(worker_id);
  std::vector<std::pair<std::string, int64_t>> released;
  {
    absl::MutexLock lock(&mu_);
    auto w = workers_.find(worker_id);
    if (w == workers_.end()) return;
    w->second.draining = true;  // a stopping worker takes nothing more
    for (const v1::ReleasedAttempt& r : msg.attempts()) {
      auto it = w->second.attempts.find(r.attempt_id());
      // Only the worker's own, current share: a stale token changes nothing.
      if (it == w->second.attempts.end() || it->second.fencing_token != r.fencing_token()) continue;
      released.push_back({worker_id, r.attempt_id()});
    }
  }
  ReleaseAttempts(released, msg.reason().empty() ? "worker stopping" : msg.reason());
}

void Dispatcher::OnDraining(const std::string& worker_id, bool draining) {
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    auto w = workers_.find(worker_id);
    if (w == workers_.end() || w->second.draining == draining) return;
    w->second.draining = draining;
    changed = true;
  }
  if (changed) {
    std::cerr << "ablate-coordinator: worker " << worker_id
              << (draining ? " is draining: no new runs" : " takes runs again") << std::endl;
    feed_->Notify();
    Kick();
  }
}

std::vector<std::string> Dispatcher::FenceAllocations(
    const std::string& pool, const std::map<int64_t, RunningAllocation>& running, int64_t seen_ms,
    const std::string& why, bool exact) {
  std::vector<std::string> fenced;
  std::vector<std::pair<std::string, int64_t>> lost;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [worker_id, w] : workers_) {
      if (w.pool != pool || w.slurm_job_id == 0) continue;
      auto it = running.find(w.slurm_job_id);
      if (it != running.end() && (exact ? it->second.restart_count == w.slurm_restart
                                        : it->second.restart_count <= w.slurm_restart)) {
        if (it->second.ends_ms > 0) w.ends_ms = it->second.ends_ms;
        continue;
      }
      // A worker newer than what squeue saw may belong to an allocation that started since.
      if (w.fenced || w.registered_ms >= seen_ms) continue;
      w.fenced = true;
      fenced.push_back(worker_id);
      for (const auto& [attempt_id, live] : w.attempts) lost.push_back({worker_id, attempt_id});
    }
  }
  for (const std::string& id : fenced) {
    std::cerr << "ablate-coordinator: worker " << id << " fenced: " << why << std::endl;
  }
  ReleaseAttempts(lost, why);
  return fenced;
}

std::map<int64_t, int> Dispatcher::RunsByAllocation(const std::string& pool) const {
  absl::MutexLock lock(&mu_);
  std::map<int64_t, int> out;
  for (const auto& [worker_id, w] : workers_) {
    if (w.pool != pool || w.slurm_job_id == 0 || w.fenced) continue;
    out[w.slurm_job_id] += static_cast<int>(w.attempts.size());
  }
  return out;
}

std::map<std::string, WorkerAllocation> Dispatcher::WorkerAllocations() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, WorkerAllocation> out;
  for (const auto& [worker_id, w] : workers_) {
    if (!w.session || (w.slurm_job_id == 0 && !w.draining)) continue;  // connected ones only
    if (w.ssh) {
      out[worker_id] = {w.pool, 0, 0, w.draining, /*ssh=*/true};
      continue;
    }
    out[worker_id] = {w.pool, w.slurm_job_id, w.slurm_job_id ? w.ends_ms : 0, w.draining};
  }
  return out;
}

int64_t Dispatcher::ExpectedMs(const Run& run, std::map<int64_t, int64_t>* by_variant) {
  if (auto it = by_variant->find(run.variant_id); it != by_variant->end()) return it->second;
  RunFilter filter;
  filter.sweep_id = run.sweep_id;
  filter.state = RunState::kSucceeded;
  int64_t total = 0, n = 0;
  if (absl::StatusOr<std::vector<Run>> done = store_->ListRuns(filter); done.ok()) {
    for (const Run& r : *done) {
      if (r.variant_id != run.variant_id || r.started_ms == 0 || r.finished_ms < r.started_ms) {
        continue;
      }
      total += r.finished_ms - r.started_ms;
      ++n;
    }
  }
  return (*by_variant)[run.variant_id] = n > 0 ? total / n : 0;
}

}  // namespace ablate
