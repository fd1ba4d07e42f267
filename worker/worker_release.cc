// WorkerCore's ways of stopping kindly: Release (SIGTERM gives every attempt back at once),
// Drain (USR1: take no new runs) and Idle (for idle_exit). Issue 15; the rest of WorkerCore is
// worker_core.cc.
#include "worker/worker_core.h"

namespace ablate::worker {

size_t WorkerCore::ReleaseAll(const std::string& reason) {
  v1::WorkerMessage m;
  v1::Release* release = m.mutable_release();
  release->set_reason(reason);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;  // nothing new from here on
    draining_ = true;  // and heartbeats say so until the stream closes
  }
  for (const v1::HeldAttempt& h : Held()) {  // the running ones, not stale
    v1::ReleasedAttempt* r = release->add_attempts();
    r->set_attempt_id(h.attempt_id());
    r->set_fencing_token(h.fencing_token());
  }
  const size_t n = static_cast<size_t>(release->attempts_size());
  if (n == 0) return 0;
  // Not in the outbox: after this process is gone nobody would resend it, and a coordinator
  // that never gets it requeues the runs when the lease ends, which is the same result later.
  bool sent = sink_->Send(m, sink_->Generation());
  LogLine("releasing " + std::to_string(n) + " attempt(s) (" + reason + ")" +
          (sent ? "" : "; not connected, the coordinator's lease will requeue them"));
  return sent ? n : 0;
}

void WorkerCore::Drain() {
  absl::MutexLock lock(&mu_);
  if (!draining_) LogLine("draining: no new runs; the running ones finish");
  draining_ = true;
}

bool WorkerCore::draining() const {
  absl::MutexLock lock(&mu_);
  return draining_;
}

bool WorkerCore::Idle() const { return running() == 0 && outbox_->Attempts().empty(); }

}  // namespace ablate::worker
