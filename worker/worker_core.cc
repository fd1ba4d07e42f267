// Attempts, batching and outbox delivery. Lock order: mu_, then an attempt's batch_mu, then
// send_mu_; outbox appends (fsync) happen under batch_mu only, never under mu_.
#include "worker/worker_core.h"

#include <algorithm>
#include <iostream>
#include <limits>
#include <optional>

#include "common/utf8_text.h"
#include "common/worker_limits.h"
#include "worker/checkpoint_dir.h"
#include "worker/datasets.h"
#include "worker/disk_space.h"
#include "worker/nccl_handoff.h"
#include "worker/worker_core_attempt.h"

namespace ablate::worker {
namespace {

std::string RunDir(const std::string& work_dir, const v1::Assignment& a) {
  return work_dir + "/runs/" + std::to_string(a.run_id()) + "-a" + std::to_string(a.attempt_id());
}

}  // namespace

void LogLine(std::string_view line) {
  static absl::Mutex log_mu;
  absl::MutexLock lock(&log_mu);
  std::cerr << "ablate-worker: " << line << std::endl;
}

absl::StatusOr<std::unique_ptr<WorkerCore>> WorkerCore::Create(WorkerCoreOptions options,
                                                               MessageSink* sink) {
  absl::StatusOr<std::unique_ptr<Outbox>> outbox = Outbox::Open(options.work_dir + "/outbox");
  if (!outbox.ok()) return outbox.status();
  return std::unique_ptr<WorkerCore>(
      new WorkerCore(std::move(options), sink, std::move(outbox).value()));
}

WorkerCore::WorkerCore(WorkerCoreOptions options, MessageSink* sink,
                       std::unique_ptr<Outbox> outbox)
    : options_(std::move(options)),
      sink_(sink),
      outbox_(std::move(outbox)),
      snapshots_(options_.work_dir + "/snapshots", options_.fetch_snapshot) {
  pump_ = std::thread([this] { Pump(); });
}

WorkerCore::~WorkerCore() { Shutdown(); }

void WorkerCore::HandleAssignment(const v1::Assignment& as) {
  if (GiveBackIfDiskFull(as)) return;
  if (IsScriptConfig(as.config_json())) return HandleScriptAssignment(as);
  auto a = std::make_shared<Attempt>(as, options_.batcher);
  Attempt* raw = a.get();  // the attempt outlives its supervisor (it owns it)
  a->supervisor = std::make_unique<RunSupervisor>(
      SpecFor(as),
      RunCallbacks{[this, raw] { SendStarted(*raw); },
                   [this, raw](const v1::MetricPoint& p) { OnPoint(*raw, p); },
                   [this, raw](const RunResult& r) { OnExit(*raw, r); },
                   [this, raw](int64_t step, const std::string& path) {
                     OnResumed(*raw, step, path);
                   }});
  std::optional<v1::NcclId> early;
  bool refused = false;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || attempts_.count(as.attempt_id()) > 0) return;  // shutting down, or a repeat
    refused = draining_;  // sent before the coordinator heard of the drain: give it back
    if (!refused) attempts_[as.attempt_id()] = a;
    if (auto it = early_ids_.find(as.attempt_id()); it != early_ids_.end()) {
      early = it->second;
      early_ids_.erase(it);
    }
  }
  if (refused) {
    FailToStart(as, absl::UnavailableError("worker is draining"), "cancelled");
    return;
  }
  if (as.num_nodes() > 1) {
    LogLine("attempt " + std::to_string(as.attempt_id()) + ": node " +
            std::to_string(as.node_rank()) + " of " + std::to_string(as.num_nodes()) +
            (as.node_rank() == 0 ? "; its NCCL id goes to the other nodes once the trainer makes it"
                                 : "; the trainer waits for node 0's NCCL id"));
    if (early && as.node_rank() > 0) {
      Record(WriteRelayedId(*early, NcclIdPath(RunDir(options_.work_dir, as))));
    }
    if (!a->reports_metrics) {
      LogLine("attempt " + std::to_string(as.attempt_id()) +
              ": node 0 reports the metric points; this node's stay in " +
              RunDir(options_.work_dir, as) + "/events.jsonl");
    }
  }
  LogLine("run " + std::to_string(as.run_id()) + " attempt " + std::to_string(as.attempt_id()) +
          ": starting the trainer");
  if (absl::Status s = a->supervisor->Start(); !s.ok()) FailToStart(as, s);
}

RunSpec WorkerCore::SpecFor(const v1::Assignment& as) const {
  std::string run_dir = RunDir(options_.work_dir, as);
  std::vector<std::string> args = options_.trainer_args;
  for (std::string& a : TopologyArgs(as, NcclIdPath(run_dir))) args.push_back(std::move(a));
  for (std::string& a : CheckpointArgs(as)) args.push_back(std::move(a));
  return RunSpec{options_.trainer_path,
                 run_dir,
                 as.config_json(),
                 TrainGlob(options_.data_dir, as.dataset()),
                 ValGlob(options_.data_dir, as.dataset()),
                 {as.gpus().begin(), as.gpus().end()},
                 std::move(args)};
}

std::vector<std::string> WorkerCore::CheckpointArgs(const v1::Assignment& as) const {
  if (as.checkpoint_every_ms() <= 0) return {};
  const std::string run = "run " + std::to_string(as.run_id()) + " attempt " +
                          std::to_string(as.attempt_id()) + ": ";
  if (options_.checkpoint_dir.empty()) {
    LogLine(run + "the sweep asks for checkpoints every " +
            CheckpointEveryArg(as.checkpoint_every_ms()) +
            ", but this worker has no --checkpoint-dir: running without them (a requeued run "
            "starts again at step 0)");
    return {};
  }
  const std::string dir = RunCheckpointDir(options_.checkpoint_dir, as.run_id());
  absl::StatusOr<CheckpointPlan> plan =
      PlanCheckpoints(dir, as.checkpoint_every_ms(), as.resume_max_step());
  if (!plan.ok()) {
    LogLine(run + std::string(plan.status().message()) + ": running without checkpoints");
    return {};
  }
  for (const std::string& why : plan->removed) LogLine(run + "removed checkpoint " + why);
  LogLine(run + "checkpoints every " + CheckpointEveryArg(as.checkpoint_every_ms()) + " into " +
          dir +
          (plan->newest ? "; resuming from the newest readable one (at most step " +
                              std::to_string(*plan->newest) + ")"
                        : "; no earlier checkpoint to resume from: starting at step 0"));
  return plan->trainer_args;
}

void WorkerCore::OnResumed(Attempt& a, int64_t step, const std::string& path) {
  LogLine("run " + std::to_string(a.assignment.run_id()) + " attempt " +
          std::to_string(a.assignment.attempt_id()) + ": the trainer resumed from step " +
          std::to_string(step) + " (" + path + ")");
  absl::MutexLock lock(&a.batch_mu);
  a.resumed_from_step = step;
}

void WorkerCore::HandleNcclId(const v1::NcclId& id) {
  std::shared_ptr<Attempt> a;
  {
    absl::MutexLock lock(&mu_);
    auto it = attempts_.find(id.attempt_id());
    if (it == attempts_.end()) {
      early_ids_[id.attempt_id()] = id;  // the Assignment is still on its way
      return;
    }
    a = it->second;
  }
  if (a->assignment.node_rank() == 0) return;  // our own id, echoed
  if (a->script) {
    LogLine("attempt " + std::to_string(id.attempt_id()) + ": torch rendezvous " +
            id.master_addr() + ":" + std::to_string(id.master_port()) + " from node 0");
    absl::MutexLock lock(&mu_);
    a->rendezvous = std::make_pair(id.master_addr(), id.master_port());  // wakes its starter
    return;
  }
  LogLine("attempt " + std::to_string(id.attempt_id()) + ": NCCL id from node 0 received");
  Record(WriteRelayedId(id, NcclIdPath(RunDir(options_.work_dir, a->assignment))));
}

void WorkerCore::RelayNcclIds() {
  std::vector<std::shared_ptr<Attempt>> waiting;
  std::map<int64_t, v1::NcclId> script_ids;  // script runs: node 0's torch rendezvous
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, a] : attempts_) {
      const v1::Assignment& as = a->assignment;
      if (as.num_nodes() > 1 && as.node_rank() == 0 && !a->id_sent) waiting.push_back(a);
      if (a->script) {
        if (std::optional<v1::NcclId> r = ScriptRendezvous(*a)) script_ids[id] = *r;
      }
    }
  }
  for (const std::shared_ptr<Attempt>& a : waiting) {
    int64_t attempt_id = a->assignment.attempt_id();
    std::optional<v1::NcclId> id =
        a->script ? (script_ids.count(attempt_id) ? std::optional(script_ids[attempt_id])
                                                  : std::nullopt)
                  : ReadLocalId(attempt_id, NcclIdPath(RunDir(options_.work_dir, a->assignment)));
    if (!id) continue;
    v1::WorkerMessage m;
    *m.mutable_nccl_id() = *id;
    // Not in the outbox: only the live attempt needs it; a failed send is tried at the next tick.
    if (!sink_->Send(m, sink_->Generation())) continue;
    LogLine("attempt " + std::to_string(attempt_id) + ": NCCL id sent for the other nodes");
    absl::MutexLock lock(&mu_);
    a->id_sent = true;
  }
}

void WorkerCore::FailToStart(const v1::Assignment& as, const absl::Status& why,
                             const std::string& status) {
  LogLine("attempt " + std::to_string(as.attempt_id()) + ": " + why.ToString());
  v1::RunFinished f;
  f.set_attempt_id(as.attempt_id());
  f.set_fencing_token(as.fencing_token());
  f.set_status(status);
  f.set_exit_code(status == "failed" ? 127 : 0);
  f.set_error(std::string(why.message()));
  bool given_back = (status == "failed" && GiveBackIfNoSpace(as, why)) ||
                    GiveBackIfNoSpace(as, AppendFinished(f));
  {
    absl::MutexLock lock(&mu_);
    auto it = attempts_.find(as.attempt_id());
    if (it != attempts_.end()) {
      absl::MutexLock batch_lock(&it->second->batch_mu);
      it->second->finished = true;
      it->second->given_back = given_back;
    }
  }
  SendPending();
}

void WorkerCore::SendStarted(const Attempt& a) {
  v1::WorkerMessage m;
  m.mutable_run_started()->set_attempt_id(a.assignment.attempt_id());
  m.mutable_run_started()->set_fencing_token(a.assignment.fencing_token());
  // Not in the outbox: after a reconnect, Hello.running says the same thing.
  sink_->Send(m, sink_->Generation());
}

void WorkerCore::OnPoint(Attempt& a, const v1::MetricPoint& point) {
  if (!a.reports_metrics) return;
  absl::MutexLock lock(&a.batch_mu);
  if (auto batch = a.batcher.Add(point, options_.clock->MonotonicMs())) {
    AppendBatch(a, std::move(*batch));
  }
}

void WorkerCore::AppendBatch(Attempt& a, std::vector<v1::MetricPoint> points) {
  if (points.empty()) return;
  v1::MetricBatch batch;
  batch.set_attempt_id(a.assignment.attempt_id());
  batch.set_fencing_token(a.assignment.fencing_token());
  if (a.resumed_from_step) batch.set_resumed_from_step(*a.resumed_from_step);
  for (v1::MetricPoint& p : points) *batch.add_points() = std::move(p);
  if (a.given_back) return;
  absl::StatusOr<v1::WorkerMessage> m = outbox_->AppendBatch(std::move(batch));
  if (m.ok()) return;
  if (IsNoSpace(m.status())) {
    a.given_back = true;  // a curve with a hole cannot be reported: the attempt goes back
    GiveBack(a.assignment, m.status());
    return;
  }
  Record(m.status());
}

absl::Status WorkerCore::AppendFinished(const v1::RunFinished& finished) {
  // Every text of a result is valid UTF-8 within the coordinator's limits, whatever produced it
  // (a trainer, a script, a file name in an error): a result the coordinator cannot parse would
  // be sent again after every reconnect.
  v1::RunFinished bounded = finished;
  bounded.set_error(std::string(Utf8Head(ValidUtf8(finished.error()), kMaxErrorBytes)));
  bounded.set_stderr_tail(
      std::string(Utf8Tail(ValidUtf8(finished.stderr_tail()), kMaxStderrTailBytes)));
  absl::StatusOr<v1::WorkerMessage> m = outbox_->AppendFinished(bounded);
  if (!m.ok() && !IsNoSpace(m.status())) Record(m.status());
  return m.status();
}

void WorkerCore::OnExit(Attempt& a, const RunResult& r) {
  const v1::Assignment& as = a.assignment;
  LogLine("run " + std::to_string(as.run_id()) + " attempt " + std::to_string(as.attempt_id()) +
          ": trainer ended: " + r.status + (r.error.empty() ? "" : " (" + r.error + ")"));
  {
    absl::MutexLock lock(&a.batch_mu);
    AppendBatch(a, a.batcher.TakeAll());
    v1::RunFinished f;
    f.set_attempt_id(as.attempt_id());
    f.set_fencing_token(as.fencing_token());
    f.set_status(r.status);
    f.set_exit_code(r.exit_code);
    f.set_error(r.error);
    f.set_stderr_tail(r.stderr_tail);
    *f.mutable_summary() = r.summary;
    // A trainer that failed while the disk is full (its checkpoint did not fit, say) did not
    // fail on its own: given back like a run the worker cannot record.
    if (!a.given_back && r.status == "failed") {
      a.given_back = GiveBackIfNoSpace(as, absl::UnknownError(r.error));
    }
    if (!a.given_back) a.given_back = GiveBackIfNoSpace(as, AppendFinished(f));
    a.finished = true;
  }
  bool stale;
  {
    absl::MutexLock lock(&mu_);
    stale = a.stale;
  }
  if (stale) Record(outbox_->Drop(as.attempt_id()));
  SendPending();
}

void WorkerCore::HandleAck(const v1::Ack& ack) {
  // The coordinator acknowledges a RunFinished with finished = true and seq 0: it commits one
  // only after every batch before it, so the whole outbox entry goes.
  const int64_t seq = ack.finished() ? std::numeric_limits<int64_t>::max() : ack.seq();
  {
    absl::MutexLock lock(&send_mu_);
    Delivery& d = delivery_[ack.attempt_id()];
    if (seq > d.acked) {  // progress: the resend clock starts again, at its shortest
      d.acked = seq;
      d.progress_ms = options_.clock->MonotonicMs();
      d.resend_after_ms = options_.resend_after.count();
    }
  }
  Record(outbox_->Ack(ack.attempt_id(), seq));
}

void WorkerCore::HandleCancel(const v1::Cancel& cancel) {
  if (CancelStarting(cancel)) return;
  std::shared_ptr<Attempt> a;
  {
    absl::MutexLock lock(&mu_);
    auto it = attempts_.find(cancel.attempt_id());
    if (it != attempts_.end()) a = it->second;
  }
  bool running = a && a->supervisor && !a->supervisor->done();
  if (running) {
    LogLine("attempt " + std::to_string(cancel.attempt_id()) + ": cancel (" + cancel.reason() +
            ")");
    a->supervisor->Cancel(std::chrono::milliseconds(std::max<int64_t>(0, cancel.grace_ms())));
    return;
  }
  if (a) {
    absl::MutexLock lock(&a->batch_mu);  // wait for OnExit to finish writing the outbox
  }
  LogLine("attempt " + std::to_string(cancel.attempt_id()) + ": writes refused (" +
          cancel.reason() + "), dropping its outbox");
  Record(outbox_->Drop(cancel.attempt_id()));
}

void WorkerCore::HandleStale(const std::vector<int64_t>& ids) {
  for (int64_t id : ids) {
    std::shared_ptr<Attempt> a;
    {
      absl::MutexLock lock(&mu_);
      auto it = attempts_.find(id);
      if (it != attempts_.end()) a = it->second, a->stale = true;  // a starting script: aborts
    }
    LogLine("attempt " + std::to_string(id) + " is stale: stopping it");
    if (a && a->supervisor) a->supervisor->Cancel(options_.shutdown_grace);
    Record(outbox_->Drop(id));
  }
}

std::vector<v1::HeldAttempt> WorkerCore::Held() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::HeldAttempt> held;
  for (const auto& [id, a] : attempts_) {
    if (a->stale) continue;
    if (!a->starting && (!a->supervisor || a->supervisor->done())) continue;
    v1::HeldAttempt h;
    h.set_run_id(a->assignment.run_id());
    h.set_attempt_id(id);
    h.set_fencing_token(a->assignment.fencing_token());
    *h.mutable_gpus() = a->assignment.gpus();  // the coordinator counts them as taken
    // After a coordinator restart, how a node other than 0 is known again as its gang's node.
    h.set_node_rank(a->assignment.node_rank());
    h.set_num_nodes(a->assignment.num_nodes());
    held.push_back(h);
  }
  return held;
}

size_t WorkerCore::running() const { return Held().size(); }

void WorkerCore::SendPending() {
  absl::MutexLock lock(&send_mu_);
  uint64_t generation = sink_->Generation();
  if (generation == 0) return;
  const int64_t now = options_.clock->MonotonicMs();
  if (generation != sent_generation_) {
    for (auto& [id, d] : delivery_) d.sent_upto = 0;
    sent_generation_ = generation;
  }
  const std::vector<int64_t> attempts = outbox_->Attempts();
  std::erase_if(delivery_, [&](const auto& entry) {
    return !std::binary_search(attempts.begin(), attempts.end(), entry.first);
  });
  for (int64_t id : attempts) {
    Delivery& d = delivery_[id];
    if (d.resend_after_ms == 0) d.resend_after_ms = options_.resend_after.count();
    std::vector<OutboxEntry> pending = outbox_->PendingAfter(id, d.sent_upto);
    // The silence is counted from the last Ack that advanced, or from the send of the oldest
    // entry still unacknowledged: newer batches sent meanwhile do not put a resend off.
    if (pending.empty()) {
      if (!ResendDue(id, d, now)) continue;
      pending = outbox_->PendingAfter(id, 0);
      d.progress_ms = now;
    } else if (d.sent_upto <= d.acked) {
      d.progress_ms = now;
    }
    for (const OutboxEntry& e : pending) {
      if (!sink_->Send(e.message, generation)) return;
      d.sent_upto = e.seq;
    }
  }
}

// Everything of the attempt was sent and part of it is still unacknowledged after a silence of
// resend_after_ms (a batch that did not commit on the coordinator, a reply that was lost): it
// is sent again on the same stream, and the silence allowed doubles until an Ack advances.
bool WorkerCore::ResendDue(int64_t attempt_id, Delivery& d, int64_t now) {
  if (d.sent_upto == 0 || now - d.progress_ms < d.resend_after_ms) return false;
  if (outbox_->PendingAfter(attempt_id, 0).empty()) return false;
  LogLine("attempt " + std::to_string(attempt_id) + ": no acknowledgement for " +
          std::to_string(now - d.progress_ms) + " ms; sending its unacknowledged messages again");
  d.resend_after_ms = std::min<int64_t>(d.resend_after_ms * 2, kMaxResendAfterMs);
  return true;
}

void WorkerCore::Pump() {
  absl::MutexLock lock(&mu_);
  while (!pump_stop_) {
    mu_.AwaitWithTimeout(absl::Condition(&pump_stop_), absl::FromChrono(options_.tick));
    mu_.Unlock();
    FlushDueAndReap();
    SendGiveBacks();
    ProbeDisk();
    RelayNcclIds();
    SendPending();
    mu_.Lock();
  }
}

// Cuts batches that are old enough and destroys the supervisors of finished attempts (joining
// their threads, which cannot happen on those threads themselves).
void WorkerCore::FlushDueAndReap() {
  std::vector<std::shared_ptr<Attempt>> all, reaped;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = attempts_.begin(); it != attempts_.end();) {
      bool done = !it->second->starting &&
                  (!it->second->supervisor || it->second->supervisor->done());
      (done ? reaped : all).push_back(it->second);
      it = done ? attempts_.erase(it) : std::next(it);
    }
  }
  for (const std::shared_ptr<Attempt>& a : all) {
    absl::MutexLock lock(&a->batch_mu);
    if (a->finished) continue;
    if (auto batch = a->batcher.TakeIfDue(options_.clock->MonotonicMs())) {
      AppendBatch(*a, std::move(*batch));
    }
  }
  reaped.clear();  // ~RunSupervisor joins
}

void WorkerCore::Shutdown() {
  std::vector<std::shared_ptr<Attempt>> all;
  {
    absl::MutexLock lock(&mu_);
    if (pump_stop_) return;
    stopping_ = true;
    for (const auto& [id, a] : attempts_) all.push_back(a);
  }
  // Script attempts still starting see stopping_ and end unstarted; the others hand over to
  // their supervisors, which the loop below stops.
  for (const auto& a : all) {
    if (a->starter.joinable()) a->starter.join();
  }
  for (const auto& a : all) {
    if (a->supervisor) a->supervisor->Cancel(options_.shutdown_grace);
  }
  for (const auto& a : all) {
    if (a->supervisor) a->supervisor->Wait(options_.shutdown_grace + std::chrono::seconds(2));
  }
  {
    absl::MutexLock lock(&mu_);
    pump_stop_ = true;
  }
  if (pump_.joinable()) pump_.join();
  FlushDueAndReap();
  SendPending();
}

void WorkerCore::Record(const absl::Status& s) {
  if (s.ok()) return;
  LogLine("error: " + s.ToString());
  absl::MutexLock lock(&mu_);
  if (first_error_.ok()) first_error_ = s;
}

}  // namespace ablate::worker
