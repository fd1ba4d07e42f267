// WorkerCore on a full disk (issue 19): attempts it can no longer record are given back to the
// coordinator as an infrastructure failure, new ones are refused the same way, and a probe write
// tells when space has come back. The rest of WorkerCore is worker_core.cc.
#include "worker/disk_space.h"
#include "worker/worker_core.h"
#include "worker/worker_core_attempt.h"

namespace ablate::worker {
namespace {

// What must fit before the worker takes runs again: a few outbox batches and a run folder.
constexpr size_t kProbeBytes = 1 << 20;
constexpr int64_t kProbeEveryMs = 1000;

}  // namespace

bool WorkerCore::disk_full() const {
  absl::MutexLock lock(&disk_mu_);
  return disk_full_;
}

void WorkerCore::GiveBack(const v1::Assignment& as, const absl::Status& why) {
  const std::string reason = "no space left on the worker's disk (" +
                             std::string(why.message()) + ")";
  bool first;
  {
    absl::MutexLock lock(&disk_mu_);
    first = !disk_full_;
    disk_full_ = true;
    disk_reason_ = reason;
    next_probe_ms_ = options_.clock->MonotonicMs() + kProbeEveryMs;
    give_backs_.push_back({as.attempt_id(), as.fencing_token(), reason});
  }
  if (first) {
    LogLine("work dir " + options_.work_dir + " is full: " + std::string(why.message()) +
            "; taking no new runs until space returns");
  }
  LogLine("run " + std::to_string(as.run_id()) + " attempt " + std::to_string(as.attempt_id()) +
          ": cannot be recorded on this disk; stopping it and giving it back (requeued, not "
          "charged)");
}

bool WorkerCore::GiveBackIfDiskFull(const v1::Assignment& as) {
  {
    absl::MutexLock lock(&disk_mu_);
    if (!disk_full_) return false;
    give_backs_.push_back({as.attempt_id(), as.fencing_token(), disk_reason_});
  }
  LogLine("run " + std::to_string(as.run_id()) + " attempt " + std::to_string(as.attempt_id()) +
          ": the work dir is full; given back at once (requeued, not charged)");
  return true;
}

bool WorkerCore::GiveBackIfNoSpace(const v1::Assignment& as, const absl::Status& why) {
  if (why.ok()) return false;
  if (IsNoSpace(why)) {
    GiveBack(as, why);
    return true;
  }
  // Another error while the disk is full (a snapshot that could not be unpacked, a trainer that
  // could not write): the disk, not the run, is what failed.
  absl::Status probe = ProbeSpace(options_.work_dir, kProbeBytes);
  if (!IsNoSpace(probe)) return false;
  GiveBack(as, absl::Status(probe.code(), std::string(why.message()) + "; " +
                                              std::string(probe.message())));
  return true;
}

void WorkerCore::SendGiveBacks() {
  std::vector<GiveBackEntry> todo;
  {
    absl::MutexLock lock(&disk_mu_);
    todo.swap(give_backs_);
  }
  for (const GiveBackEntry& g : todo) {
    std::shared_ptr<Attempt> a;
    {
      absl::MutexLock lock(&mu_);
      if (auto it = attempts_.find(g.attempt_id); it != attempts_.end()) a = it->second;
    }
    if (a && a->supervisor && !a->supervisor->done()) {
      a->supervisor->Cancel(options_.shutdown_grace);
    }
    v1::WorkerMessage m;
    m.mutable_release()->set_reason(g.reason);
    v1::ReleasedAttempt* r = m.mutable_release()->add_attempts();
    r->set_attempt_id(g.attempt_id);
    r->set_fencing_token(g.fencing_token);
    // Not in the outbox, which is what is full. While disconnected it waits here; a coordinator
    // that hears nothing loses the attempt with its lease, which also requeues it uncharged.
    if (!sink_->Send(m, sink_->Generation())) {
      absl::MutexLock lock(&disk_mu_);
      give_backs_.push_back(g);
      continue;
    }
    LogLine("attempt " + std::to_string(g.attempt_id) + " given back: " + g.reason);
    Record(outbox_->Drop(g.attempt_id));  // its writes are refused from now on
  }
}

void WorkerCore::ProbeDisk() {
  {
    absl::MutexLock lock(&disk_mu_);
    const int64_t now = options_.clock->MonotonicMs();
    if (!disk_full_ || now < next_probe_ms_) return;
    next_probe_ms_ = now + kProbeEveryMs;
  }
  if (!ProbeSpace(options_.work_dir, kProbeBytes).ok()) return;
  {
    absl::MutexLock lock(&disk_mu_);
    disk_full_ = false;
  }
  LogLine("work dir " + options_.work_dir + " has space again; taking runs");
}

}  // namespace ablate::worker
