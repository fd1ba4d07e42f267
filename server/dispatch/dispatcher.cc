// Worker sessions, leases and the scheduling loop.
#include "server/dispatch/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <set>

#include "common/clock.h"
#include "server/core/worker_input.h"
#include "server/convert/convert.h"
#include "trainer/config/knob_schema.h"

namespace ablate {
namespace {

// Variants of a sweep that run a script (their config has "script", issue 14): only workers
// started with --allow-scripts take their runs.
absl::StatusOr<std::set<int64_t>> ScriptVariants(const Store& store, int64_t sweep_id) {
  absl::StatusOr<std::vector<Variant>> variants = store.ListVariants(sweep_id);
  if (!variants.ok()) return variants.status();
  std::set<int64_t> ids;
  for (const Variant& v : *variants) {
    nlohmann::json config = nlohmann::json::parse(v.config_json, nullptr, false);
    if (config.is_object() && config.contains("script")) ids.insert(v.id);
  }
  return ids;
}

DispatcherOptions WithDefaults(DispatcherOptions o) {
  if (!o.clock) o.clock = [] { return SystemClock::Get().WallMs(); };
  return o;
}

AttemptState AttemptStateOf(const std::string& status) {
  if (status == "ok") return AttemptState::kSucceeded;
  if (status == "cancelled") return AttemptState::kCancelled;
  return AttemptState::kFailed;  // "failed", "nan", anything unknown
}

v1::CoordinatorMessage AckOf(int64_t attempt_id, int64_t seq, bool finished) {
  v1::CoordinatorMessage m;
  m.mutable_ack()->set_attempt_id(attempt_id);
  m.mutable_ack()->set_seq(seq);
  m.mutable_ack()->set_finished(finished);
  return m;
}

v1::CoordinatorMessage CancelOf(int64_t attempt_id, int64_t grace_ms, const std::string& why) {
  v1::CoordinatorMessage m;
  m.mutable_cancel()->set_attempt_id(attempt_id);
  m.mutable_cancel()->set_grace_ms(grace_ms);
  m.mutable_cancel()->set_reason(why);
  return m;
}

// "node 1 of 2 (worker w-b)": who a gang's result or loss came from.
std::string NodeLabel(const GangNode& node, const std::string& worker_id) {
  if (node.rank == GangNode::kUnknownRank) return "a node other than 0 (worker " + worker_id + ")";
  return "node " + std::to_string(node.rank) + " of " + std::to_string(node.num_nodes) +
         " (worker " + worker_id + ")";
}

// The attempt's result as `node` reports it. Only node 0's summary is the run's; a gang's error
// names the node it came from.
AttemptResult ResultOf(const v1::RunFinished& msg, const GangNode& node,
                       const std::string& worker_id) {
  AttemptResult result;
  result.state = AttemptStateOf(msg.status());
  result.exit_code = msg.exit_code();
  result.error = msg.error();
  if (msg.status() == "nan" && result.error.empty()) result.error = "loss became NaN or infinite";
  result.stderr_tail = msg.stderr_tail();
  if (node.authoritative() && msg.has_summary()) result.summary = FromProto(msg.summary());
  if (node.in_gang() && result.state != AttemptState::kSucceeded) {
    result.error =
        NodeLabel(node, worker_id) + ": " + (result.error.empty() ? msg.status() : result.error);
  }
  return result;
}

// A write refused for good: the worker must drop it (and stop the attempt).
bool RefusedForGood(const absl::Status& s) {
  return s.code() == absl::StatusCode::kFailedPrecondition ||
         s.code() == absl::StatusCode::kNotFound ||
         s.code() == absl::StatusCode::kInvalidArgument;
}

}  // namespace

Dispatcher::Dispatcher(Store* store, ChangeFeed* feed, DispatcherOptions options)
    : store_(store), feed_(feed), options_(WithDefaults(std::move(options))) {}

Dispatcher::~Dispatcher() { Stop(); }

absl::Status Dispatcher::Start() {
  int64_t now = Now();
  for (RunState state : {RunState::kAssigned, RunState::kRunning}) {
    RunFilter filter;
    filter.state = state;
    absl::StatusOr<std::vector<Run>> runs = store_->ListRuns(filter);
    if (!runs.ok()) return runs.status();
    std::lock_guard<std::mutex> lock(mu_);
    for (const Run& r : *runs) {
      absl::StatusOr<Attempt> a = store_->GetAttempt(r.current_attempt_id);
      if (!a.ok()) continue;
      WorkerState& w = workers_[a->worker_id];
      w.last_heartbeat_ms = now + options_.restart_grace_ms;  // lease + grace to reconnect
      // The store names node 0's worker; the gang's size comes with the first node's Hello.
      LiveAttempt& live = w.attempts[a->id];
      live = LiveAttempt{r.id, a->fencing_token, {}, GangNode{}, /*restored=*/true};
      live.sweep_id = r.sweep_id;
      live.block = r.seed;
    }
  }
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void Dispatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  kick_cv_.notify_all();
  if (loop_.joinable()) loop_.join();
}

void Dispatcher::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kicked_ = true;
  }
  kick_cv_.notify_all();
}

void Dispatcher::Loop() {
  while (true) {
    ExpireLeases();
    ScheduleOnce();
    std::unique_lock<std::mutex> lock(mu_);
    kick_cv_.wait_for(lock, std::chrono::milliseconds(options_.tick_ms),
                      [this] { return kicked_ || stop_; });
    if (stop_) return;
    kicked_ = false;
  }
}

absl::StatusOr<v1::Welcome> Dispatcher::Register(const v1::Hello& hello,
                                                 std::shared_ptr<WorkerSession> session) {
  const std::string& id = hello.worker_id();
  if (absl::Status s = CheckHello(hello); !s.ok()) {
    std::cerr << "ablate-coordinator: a Hello refused: " << s.message() << std::endl;
    return s;
  }
  Worker record;
  record.id = id;
  record.host = hello.host();
  for (const v1::Gpu& g : hello.gpus()) record.gpus.push_back(FromProto(g));
  record.cpu_slots = hello.cpu_slots();
  record.trainer_version = hello.trainer_version();
  record.datasets.assign(hello.datasets().begin(), hello.datasets().end());
  record.connected = true;
  record.last_heartbeat_ms = Now();
  if (absl::Status s = store_->UpsertWorker(record); !s.ok()) return s;

  v1::Welcome welcome;
  welcome.set_heartbeat_interval_ms(options_.heartbeat_interval_ms);
  welcome.set_lease_ms(options_.lease_ms);
  std::map<int64_t, LiveAttempt> known;  // the shares this worker held before the reconnect
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = workers_.find(id); it != workers_.end()) known = it->second.attempts;
  }
  std::map<int64_t, LiveAttempt> held;
  for (const v1::HeldAttempt& h : hello.running()) {
    auto own = known.find(h.attempt_id());
    std::optional<LiveAttempt> share =
        AcceptHeld(id, h, own != known.end() ? &own->second : nullptr);
    if (share) {
      held[h.attempt_id()] = *std::move(share);
    } else {
      welcome.add_stale_attempt_ids(h.attempt_id());
    }
  }
  // An Assignment must never overtake the Welcome: the worker closes a stream whose first answer
  // is anything else. The session is published below, after this send.
  v1::CoordinatorMessage first;
  *first.mutable_welcome() = welcome;
  if (!session->Send(first)) {
    return absl::UnavailableError("the stream of worker " + id + " closed before its Welcome");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    WorkerState& w = workers_[id];
    // Attempts the worker no longer runs: wait a lease for their RunFinished from its outbox.
    for (auto& [attempt_id, live] : w.attempts) {
      if (held.count(attempt_id)) continue;
      // The first reconnect without it starts the wait; later ones do not extend it.
      if (live.orphan_deadline_ms == 0) live.orphan_deadline_ms = Now() + options_.lease_ms;
      held[attempt_id] = live;
    }
    w.session = std::move(session);
    w.marked_gone = false;
    w.last_heartbeat_ms = Now();
    w.gpu_indices.clear();
    for (const v1::Gpu& g : hello.gpus()) w.gpu_indices.push_back(g.index());
    w.gpu_model = hello.gpus().empty() ? "" : hello.gpus(0).model();
    w.cpu_slots = hello.cpu_slots();
    w.datasets = record.datasets;
    w.allow_scripts = hello.allow_scripts();
    NoteSlurm(hello, Now(), &w);
    w.attempts = std::move(held);
    for (const auto& [attempt_id, live] : w.attempts) {
      if (live.node.in_gang() && !live.restored) LearnGangSize(attempt_id, live.node.num_nodes);
    }
  }
  feed_->Notify();
  Kick();
  return welcome;
}

std::optional<Dispatcher::LiveAttempt> Dispatcher::AcceptHeld(const std::string& worker_id,
                                                              const v1::HeldAttempt& h,
                                                              const LiveAttempt* own) const {
  // The store's truth first: the run's current attempt, not ended, this fencing token.
  absl::StatusOr<Attempt> a = store_->GetAttempt(h.attempt_id());
  if (!a.ok() || a->fencing_token != h.fencing_token()) return std::nullopt;
  if (a->state != AttemptState::kAssigned && a->state != AttemptState::kRunning) {
    return std::nullopt;
  }
  absl::StatusOr<Run> r = store_->GetRun(a->run_id);
  if (!r.ok() || r->current_attempt_id != a->id || IsTerminal(r->state)) return std::nullopt;
  // The node it claims; a worker that does not say (num_nodes 0): its share as recorded.
  GangNode node{h.node_rank(), h.num_nodes()};
  if (h.num_nodes() == 0) node = own ? own->node : GangNode{};
  if (node.rank < 0 || node.rank >= node.num_nodes) return std::nullopt;
  // The store records node 0's worker: that worker is node 0 and no other node.
  if ((node.rank == 0) != (a->worker_id == worker_id)) return std::nullopt;
  if (own && !own->restored && own->node != node) return std::nullopt;  // its node stays its own
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FitsGang(worker_id, a->id, node)) return std::nullopt;
  }
  LiveAttempt live{a->run_id, a->fencing_token,
                   std::vector<int>(h.gpus().begin(), h.gpus().end()), node};
  // Kept across reconnects and coordinator restarts, so the block's GPU model stays known.
  live.sweep_id = r->sweep_id;
  live.block = r->seed;
  return live;
}

bool Dispatcher::FitsGang(const std::string& worker_id, int64_t attempt_id,
                          const GangNode& node) const {
  for (const auto& [id, w] : workers_) {
    auto it = w.attempts.find(attempt_id);
    if (id == worker_id || it == w.attempts.end()) continue;
    const LiveAttempt& other = it->second;
    const GangNode theirs = other.restored ? GangNode{0, node.num_nodes} : other.node;
    if (theirs.num_nodes != node.num_nodes || theirs.rank == node.rank) return false;
  }
  return true;
}

void Dispatcher::LearnGangSize(int64_t attempt_id, int num_nodes) {
  for (auto& [id, w] : workers_) {
    auto it = w.attempts.find(attempt_id);
    if (it == w.attempts.end() || !it->second.restored) continue;
    it->second.node.num_nodes = num_nodes;
    it->second.restored = false;
  }
}

void Dispatcher::Unregister(const std::string& worker_id, const WorkerSession* session) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workers_.find(worker_id);
    if (it == workers_.end() || it->second.session.get() != session) return;
    it->second.session.reset();
  }
  (void)store_->SetWorkerConnected(worker_id, false);
  feed_->Notify();
  Kick();
}

void Dispatcher::OnHeartbeat(const std::string& worker_id) {
  // Every message proves liveness; the store hears of it at most once per heartbeat interval,
  // so that metric batches do not each cost a second write, and without waiting: the touch is
  // committed with the writer's next group (the metric batch that carried it, usually).
  int64_t now = Now();
  bool persist = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workers_.find(worker_id);
    if (it == workers_.end()) return;
    it->second.last_heartbeat_ms = now;
    if (now - it->second.persisted_heartbeat_ms >= options_.heartbeat_interval_ms) {
      it->second.persisted_heartbeat_ms = now;
      persist = true;
    }
  }
  if (persist) store_->TouchWorkerLater(worker_id, now);
}

void Dispatcher::OnDatasets(const std::string& worker_id, std::vector<std::string> datasets) {
  std::sort(datasets.begin(), datasets.end());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workers_.find(worker_id);
    if (it == workers_.end()) return;
    it->second.datasets = datasets;
  }
  absl::StatusOr<Worker> record = store_->GetWorker(worker_id);
  if (record.ok()) {
    record->datasets = std::move(datasets);
    if (absl::Status s = store_->UpsertWorker(*record); !s.ok()) {
      std::cerr << "coordinator: storing the datasets of worker " << worker_id
                << " failed: " << s << std::endl;
    }
  }
  feed_->Notify();
  Kick();
}

std::optional<Dispatcher::LiveAttempt> Dispatcher::ShareOf(const std::string& worker_id,
                                                           int64_t attempt_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto w = workers_.find(worker_id);
  if (w == workers_.end()) return std::nullopt;
  auto a = w->second.attempts.find(attempt_id);
  if (a == w->second.attempts.end()) return std::nullopt;
  return a->second;
}

GangNode Dispatcher::NodeOf(const std::string& worker_id, int64_t attempt_id) const {
  if (std::optional<LiveAttempt> share = ShareOf(worker_id, attempt_id)) return share->node;
  absl::StatusOr<Attempt> a = store_->GetAttempt(attempt_id);
  if (!a.ok() || a->worker_id == worker_id) return GangNode{};
  return GangNode{GangNode::kUnknownRank, 0};
}

void Dispatcher::OnRunStarted(const std::string& worker_id, const v1::RunStarted& msg) {
  OnHeartbeat(worker_id);
  if (!HoldsAttempt(worker_id, msg.attempt_id(), msg.fencing_token())) {
    for (const v1::CoordinatorMessage& m :
         RefuseForeign(worker_id, msg.attempt_id(), "RunStarted", {})) {
      if (m.has_cancel()) SendTo(worker_id, m);
    }
    return;
  }
  absl::Status s = store_->MarkAttemptRunning(msg.attempt_id(), msg.fencing_token());
  if (RefusedForGood(s)) {
    SendTo(worker_id, CancelOf(msg.attempt_id(), options_.cancel_grace_ms, std::string(s.message())));
  }
  feed_->Notify();
}

std::vector<v1::CoordinatorMessage> Dispatcher::OnMetrics(const std::string& worker_id,
                                                          const v1::MetricBatch& msg) {
  MetricsPlan plan = PlanMetrics(worker_id, msg);
  if (plan.done) return std::move(plan.replies);
  absl::Status s = plan.status;
  if (plan.append) {
    s = store_
            ->AppendMetrics(plan.run_id, msg.attempt_id(), msg.fencing_token(), msg.seq(),
                            plan.points, plan.resumed)
            .status();
  }
  return MetricsStored(msg.attempt_id(), msg.seq(), s);
}

void Dispatcher::OnMetricsAsync(const std::string& worker_id, const v1::MetricBatch& msg,
                                std::function<void(std::vector<v1::CoordinatorMessage>)> reply) {
  MetricsPlan plan = PlanMetrics(worker_id, msg);
  if (plan.done) return reply(std::move(plan.replies));
  const int64_t attempt_id = msg.attempt_id();
  const int64_t seq = msg.seq();
  if (!plan.append) return reply(MetricsStored(attempt_id, seq, plan.status));
  // Loaded now, on the caller's thread: the completion (on the writer thread) then finds the
  // attempt's committed seqs in memory.
  (void)CommittedPrefix(attempt_id);
  auto done = [this, attempt_id, seq, reply](absl::StatusOr<bool> stored) {
    reply(MetricsStored(attempt_id, seq, stored.status()));
  };
  if (!store_->AppendMetricsLater(plan.run_id, attempt_id, msg.fencing_token(), seq,
                                  std::move(plan.points), plan.resumed, done)) {
    reply(MetricsStored(attempt_id, seq, absl::FailedPreconditionError("the store is closing")));
  }
}

Dispatcher::MetricsPlan Dispatcher::PlanMetrics(const std::string& worker_id,
                                                const v1::MetricBatch& msg) {
  OnHeartbeat(worker_id);
  MetricsPlan plan;
  plan.done = true;
  const std::string what = "metric batch " + std::to_string(msg.seq());
  if (!HoldsAttempt(worker_id, msg.attempt_id(), msg.fencing_token())) {
    plan.replies =
        RefuseForeign(worker_id, msg.attempt_id(), what, AckOf(msg.attempt_id(), msg.seq(), false));
    return plan;
  }
  if (msg.points_size() > kMaxPointsPerBatch) {  // before the points are copied
    plan.replies =
        RefuseInput(worker_id, msg.attempt_id(), msg.fencing_token(), what,
                    absl::InvalidArgumentError("batch of " + std::to_string(msg.points_size()) +
                                               " points is over the limit of " +
                                               std::to_string(kMaxPointsPerBatch) + " per batch"),
                    AckOf(msg.attempt_id(), msg.seq(), false));
    return plan;
  }
  plan.points.reserve(msg.points_size());
  for (const v1::MetricPoint& p : msg.points()) plan.points.push_back(FromProto(p));
  // The run comes from memory for live attempts; the store is asked only for strays.
  std::optional<LiveAttempt> share = ShareOf(worker_id, msg.attempt_id());
  if (share && !share->node.authoritative()) {
    // Every node's trainer emits the same points, numbered by its own worker: only node 0's are
    // stored, or the seqs of two nodes would collide. Workers of other nodes send none.
    plan.replies = {AckOf(msg.attempt_id(), msg.seq(), false)};
    return plan;
  }
  std::optional<int64_t> run_id;
  if (share) run_id = share->run_id;
  if (!run_id) {
    absl::StatusOr<Attempt> a = store_->GetAttempt(msg.attempt_id());
    plan.status = a.status();
    if (a.ok()) run_id = a->run_id;
  }
  plan.done = false;
  if (!run_id) return plan;  // MetricsStored reports plan.status
  const std::optional<int64_t> steps = ConfiguredSteps(worker_id, msg.attempt_id(), *run_id);
  absl::Status bad = CheckSeq(msg.seq());
  if (bad.ok()) bad = CheckMetricBatch(plan.points, steps);
  if (bad.ok() && msg.has_resumed_from_step()) {
    bad = CheckResumedFrom(msg.resumed_from_step(), plan.points, steps);
  }
  if (!bad.ok()) {
    plan.done = true;
    plan.replies = RefuseInput(worker_id, msg.attempt_id(), msg.fencing_token(), what, bad,
                               AckOf(msg.attempt_id(), msg.seq(), false));
    return plan;
  }
  if (msg.has_resumed_from_step()) plan.resumed = msg.resumed_from_step();
  plan.append = true;
  plan.run_id = *run_id;
  return plan;
}

std::vector<v1::CoordinatorMessage> Dispatcher::MetricsStored(int64_t attempt_id, int64_t seq,
                                                              const absl::Status& s) {
  if (s.ok()) {
    feed_->Notify();
    // The ack contract: only the committed prefix, so a batch that failed before is never
    // acknowledged by a later one.
    std::optional<int64_t> prefix = CommitBatch(attempt_id, seq);
    if (!prefix) return {};
    if (*prefix < seq) {
      std::cerr << "ablate-coordinator: metric batch " << seq << " of attempt " << attempt_id
                << " committed; acknowledging up to " << *prefix
                << " (a batch before it is not committed yet)" << std::endl;
    }
    return {AckOf(attempt_id, *prefix, false)};
  }
  if (RefusedForGood(s)) {
    return {AckOf(attempt_id, seq, false),
            CancelOf(attempt_id, options_.cancel_grace_ms, std::string(s.message()))};
  }
  std::cerr << "ablate-coordinator: metrics of attempt " << attempt_id
            << " not committed (the worker will resend): " << s.message() << std::endl;
  return {};
}

std::vector<v1::CoordinatorMessage> Dispatcher::OnRunFinished(const std::string& worker_id,
                                                              const v1::RunFinished& msg) {
  OnHeartbeat(worker_id);
  if (!HoldsAttempt(worker_id, msg.attempt_id(), msg.fencing_token(), /*gang_result=*/true)) {
    return RefuseForeign(worker_id, msg.attempt_id(), "result",
                         AckOf(msg.attempt_id(), 0, true));
  }
  const GangNode node = NodeOf(worker_id, msg.attempt_id());
  const bool ok = msg.status() == "ok";
  if (node.authoritative() && msg.last_batch_seq() > 0) {
    // The ack contract: a result is committed only after every batch before it.
    std::optional<int64_t> prefix = CommittedPrefix(msg.attempt_id());
    if (!prefix || (*prefix < msg.last_batch_seq() && StillOpen(msg.attempt_id()))) {
      std::cerr << "ablate-coordinator: result of attempt " << msg.attempt_id()
                << " waits: batches up to " << msg.last_batch_seq() << " were sent, "
                << (prefix ? std::to_string(*prefix) : std::string("an unknown number"))
                << " are committed (the worker sends the rest again)" << std::endl;
      return {};
    }
  }
  if (ok && !node.authoritative()) {
    // The attempt goes on until node 0 reports; this node's GPUs are free now.
    RetireShare(worker_id, msg.attempt_id(), msg.fencing_token());
  } else {
    AttemptResult result = ResultOf(msg, node, worker_id);
    absl::Status bad = CheckRunResult(msg.error(), msg.stderr_tail(), result.summary);
    if (!bad.ok()) {
      return RefuseInput(worker_id, msg.attempt_id(), msg.fencing_token(), "result", bad,
                         AckOf(msg.attempt_id(), 0, true));
    }
    // A run's summary is never taken on the worker's word: only what its stored points support.
    if (result.summary) {
      if (absl::StatusOr<Attempt> a = store_->GetAttempt(msg.attempt_id()); a.ok()) {
        absl::StatusOr<RunSummary> checked =
            store_->SupportedSummary(a->run_id, TargetOf(a->run_id), *result.summary);
        if (!checked.ok()) {
          std::cerr << "ablate-coordinator: result of attempt " << msg.attempt_id()
                    << " not committed (the worker will resend): " << checked.status().message()
                    << std::endl;
          return {};
        }
        result.summary = *std::move(checked);
      }
    }
    absl::Status s = store_->FinishAttempt(msg.attempt_id(), msg.fencing_token(), result).status();
    if (!s.ok() && !RefusedForGood(s)) {
      std::cerr << "ablate-coordinator: result of attempt " << msg.attempt_id()
                << " not committed (the worker will resend): " << s.message() << std::endl;
      return {};
    }
    RetireShare(worker_id, msg.attempt_id(), msg.fencing_token());
    if (node.authoritative()) ForgetBatches(msg.attempt_id());
    // Refused too (the attempt had already ended): whoever still holds it has no reason to run.
    if (!ok) CancelOtherNodes(msg.attempt_id(), worker_id, result.error);
  }
  feed_->Notify();
  Kick();
  return {AckOf(msg.attempt_id(), 0, true)};
}

void Dispatcher::OnNcclId(const std::string& worker_id, const v1::NcclId& msg) {
  OnHeartbeat(worker_id);
  std::vector<std::string> peers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Only the attempt's node 0 sends its NCCL id.
    auto sender = workers_.find(worker_id);
    if (sender == workers_.end()) return;
    auto own = sender->second.attempts.find(msg.attempt_id());
    if (own == sender->second.attempts.end() || !own->second.node.authoritative()) {
      std::cerr << "ablate-coordinator: NcclId for attempt " << msg.attempt_id()
                << " from worker " << worker_id
                << " ignored: the worker is not that attempt's node 0" << std::endl;
      return;
    }
    for (const auto& [id, w] : workers_) {
      if (id != worker_id && w.attempts.count(msg.attempt_id())) peers.push_back(id);
    }
  }
  v1::CoordinatorMessage m;
  *m.mutable_nccl_id() = msg;
  for (const std::string& peer : peers) SendTo(peer, m);
}

void Dispatcher::CancelRuns(const std::vector<int64_t>& run_ids) {
  std::set<int64_t> wanted(run_ids.begin(), run_ids.end());
  std::vector<std::pair<std::string, int64_t>> targets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [worker_id, w] : workers_) {
      for (const auto& [attempt_id, live] : w.attempts) {
        if (wanted.count(live.run_id)) targets.push_back({worker_id, attempt_id});
      }
    }
  }
  for (const auto& [worker_id, attempt_id] : targets) {
    SendTo(worker_id, CancelOf(attempt_id, options_.cancel_grace_ms, "sweep cancelled"));
  }
}

std::map<std::string, std::vector<int64_t>> Dispatcher::RunsByWorker() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [worker_id, w] : workers_) {
    for (const auto& [attempt_id, live] : w.attempts) out[worker_id].push_back(live.run_id);
  }
  return out;
}

std::map<int64_t, std::string> Dispatcher::WaitingReasons() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

void Dispatcher::ExpireLeases() {
  int64_t now = Now();
  struct Lost {
    std::string worker_id;
    int64_t attempt_id;
    GangNode node;
  };
  std::vector<Lost> lost;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [worker_id, w] : workers_) {
      bool silent = now - w.last_heartbeat_ms > options_.lease_ms;
      for (auto it = w.attempts.begin(); it != w.attempts.end();) {
        const LiveAttempt& live = it->second;
        bool orphan_expired = live.orphan_deadline_ms != 0 && now > live.orphan_deadline_ms;
        if (!silent && !orphan_expired) {
          ++it;
          continue;
        }
        lost.push_back({worker_id, it->first, live.node});
        it = w.attempts.erase(it);
      }
    }
  }
  for (const Lost& l : lost) {
    std::cerr << "ablate-coordinator: worker " << l.worker_id << " lost attempt " << l.attempt_id
              << " (no heartbeat or result within the lease); run requeued" << std::endl;
    (void)store_->LoseAttempt(l.attempt_id);
    ForgetBatches(l.attempt_id);
    // A gang cannot go on without one of its nodes: stop the others' trainers.
    CancelOtherNodes(
        l.attempt_id, l.worker_id,
        NodeLabel(l.node, l.worker_id) + " lost: no heartbeat or result within the lease");
  }
  for (const std::string& id : SilentWorkers(now)) (void)store_->SetWorkerConnected(id, false);
  if (!lost.empty()) {
    feed_->Notify();
    Kick();
  }
}

std::vector<std::string> Dispatcher::SilentWorkers(int64_t now) {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [worker_id, w] : workers_) {
    if (w.marked_gone || now - w.last_heartbeat_ms <= options_.lease_ms) continue;
    w.marked_gone = true;
    out.push_back(worker_id);
  }
  return out;
}

std::vector<NodeCapacity> Dispatcher::Capacity() const {
  std::vector<NodeCapacity> nodes;
  int64_t now = Now();
  for (const auto& [worker_id, w] : workers_) {
    if (!w.session || now - w.last_heartbeat_ms > options_.lease_ms) continue;
    if (w.draining || w.fenced) continue;
    NodeCapacity n{worker_id, static_cast<int>(w.gpu_indices.size()), w.gpu_indices, w.cpu_slots,
                   w.datasets, w.allow_scripts, w.gpu_model, w.pool, w.allocation, w.ends_ms};
    for (const auto& [attempt_id, live] : w.attempts) {
      if (live.gpus.empty()) --n.free_cpu_slots;
      for (int g : live.gpus) std::erase(n.free_gpus, g);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

std::map<std::pair<int64_t, int>, std::string> Dispatcher::BlockModels() const {
  std::map<std::pair<int64_t, int>, std::string> models;
  for (const auto& [worker_id, w] : workers_) {
    for (const auto& [attempt_id, live] : w.attempts) {
      if (!live.gpus.empty() && live.sweep_id != 0 && !w.gpu_model.empty()) {
        models[{live.sweep_id, live.block}] = w.gpu_model;
      }
    }
  }
  return models;
}

absl::StatusOr<std::vector<QueuedRun>> Dispatcher::QueuedRuns(
    std::map<int64_t, int>* active, std::map<int64_t, std::string>* held) {
  RunFilter filter;
  filter.state = RunState::kQueued;
  absl::StatusOr<std::vector<Run>> runs = store_->ListRuns(filter);
  if (!runs.ok()) return runs.status();
  std::map<int64_t, Sweep> sweeps;
  std::map<int64_t, std::set<int64_t>> script_variants;  // by sweep
  std::map<int64_t, int64_t> expected_by_variant;
  std::vector<QueuedRun> queue;
  for (const Run& r : *runs) {
    auto it = sweeps.find(r.sweep_id);
    if (it == sweeps.end()) {
      absl::StatusOr<Sweep> sw = store_->GetSweep(r.sweep_id);
      if (!sw.ok()) return sw.status();
      absl::StatusOr<std::map<RunState, int>> counts = store_->CountRunsByState(r.sweep_id);
      if (!counts.ok()) return counts.status();
      (*active)[r.sweep_id] = (*counts)[RunState::kAssigned] + (*counts)[RunState::kRunning];
      absl::StatusOr<std::set<int64_t>> scripts = ScriptVariants(*store_, r.sweep_id);
      if (!scripts.ok()) return scripts.status();
      script_variants[r.sweep_id] = *std::move(scripts);
      it = sweeps.emplace(r.sweep_id, *std::move(sw)).first;
    }
    const Sweep& sw = it->second;
    queue.push_back({r.id, r.sweep_id, sw.priority, sw.gpus_per_run, sw.dataset,
                     sw.max_concurrent, script_variants[r.sweep_id].count(r.variant_id) > 0,
                     r.dispatch_order, r.seed, sw.pool,
                     sw.pool.empty() ? 0 : ExpectedMs(r, &expected_by_variant)});
  }
  for (const auto& [sweep_id, sw] : sweeps) {
    if (sw.seeds_min == 0) continue;
    absl::StatusOr<SequencedRuns> sequenced = sequencer_.Sequence(sw);
    if (!sequenced.ok()) return sequenced.status();
    if (sequenced->skipped > 0) feed_->Notify();
    held->insert(sequenced->held.begin(), sequenced->held.end());
    std::erase_if(queue, [&, id = sweep_id](const QueuedRun& q) {
      return q.sweep_id == id && !sequenced->released.count(q.run_id);
    });
  }
  return queue;
}

void Dispatcher::ScheduleOnce() {
  PlanInput in;
  std::map<int64_t, std::string> held;
  absl::StatusOr<std::vector<QueuedRun>> queue = QueuedRuns(&in.active_per_sweep, &held);
  if (!queue.ok()) {
    std::cerr << "ablate-coordinator: scheduling skipped: " << queue.status().message()
              << std::endl;
    return;
  }
  if (queue->empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_ = held;
    return;
  }
  in.queue = *std::move(queue);
  in.now_ms = Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    in.nodes = Capacity();
    in.block_models = BlockModels();
  }
  Plan plan = PlanAssignments(std::move(in));
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_ = plan.waiting;
    waiting_.insert(held.begin(), held.end());
  }
  for (const Placement& p : plan.placements) Assign(p);
}

absl::StatusOr<std::string> Dispatcher::RunConfig(const Run& run) {
  absl::StatusOr<std::vector<Variant>> variants = store_->ListVariants(run.sweep_id);
  if (!variants.ok()) return variants.status();
  for (const Variant& v : *variants) {
    if (v.id != run.variant_id) continue;
    nlohmann::json config = nlohmann::json::parse(v.config_json, nullptr, false);
    if (!config.is_object()) return absl::DataLossError("variant config is not JSON");
    config["seed"] = run.seed;
    return CanonicalJson(config);
  }
  return absl::NotFoundError("variant of run " + std::to_string(run.id) + " not found");
}

void Dispatcher::Assign(const Placement& p) {
  absl::StatusOr<Run> run = store_->GetRun(p.run_id);
  if (!run.ok()) return;
  absl::StatusOr<Sweep> sweep = store_->GetSweep(run->sweep_id);
  absl::StatusOr<std::string> config = RunConfig(*run);
  if (!sweep.ok() || !config.ok()) return;
  // Before the new attempt exists: the curve so far is the one it may continue.
  int64_t resume_max_step = 0;
  if (sweep->checkpoint_every_ms > 0) {
    absl::StatusOr<int64_t> limit = store_->ResumeLimit(p.run_id);
    if (!limit.ok()) return;  // the store is failing; the run stays queued
    resume_max_step = *limit;
  }
  std::string step;  // node 0's: the attempt records the allocation its worker runs in
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto w = workers_.find(p.nodes[0].worker_id); w != workers_.end()) {
      step = w->second.slurm_step;
    }
  }
  absl::StatusOr<Attempt> attempt = store_->CreateAttempt(p.run_id, p.nodes[0].worker_id, step);
  if (!attempt.ok()) return;  // no longer queued (cancelled meanwhile)
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int num_nodes = static_cast<int>(p.nodes.size());
    for (int rank = 0; rank < num_nodes; ++rank) {
      const NodeShare& n = p.nodes[rank];
      LiveAttempt& live = workers_[n.worker_id].attempts[attempt->id];
      live = LiveAttempt{p.run_id, attempt->fencing_token, n.gpus, GangNode{rank, num_nodes}};
      live.sweep_id = run->sweep_id;
      live.block = run->seed;
    }
  }
  for (size_t rank = 0; rank < p.nodes.size(); ++rank) {
    v1::CoordinatorMessage m;
    v1::Assignment* a = m.mutable_assignment();
    a->set_run_id(p.run_id);
    a->set_attempt_id(attempt->id);
    a->set_fencing_token(attempt->fencing_token);
    a->set_sweep_id(run->sweep_id);
    a->set_config_json(*config);
    a->set_dataset(sweep->dataset);
    for (int g : p.nodes[rank].gpus) a->add_gpus(g);
    a->set_node_rank(static_cast<int>(rank));
    a->set_num_nodes(static_cast<int>(p.nodes.size()));
    a->set_checkpoint_every_ms(sweep->checkpoint_every_ms);
    a->set_resume_max_step(resume_max_step);
    SendTo(p.nodes[rank].worker_id, m);
  }
  feed_->Notify();
}

void Dispatcher::RetireShare(const std::string& worker_id, int64_t attempt_id,
                             std::optional<int64_t> fencing_token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return;
  auto share = it->second.attempts.find(attempt_id);
  if (share == it->second.attempts.end()) return;
  if (fencing_token && share->second.fencing_token != *fencing_token) {
    std::cerr << "ablate-coordinator: worker " << worker_id << " sent a result for attempt "
              << attempt_id << " with fencing token " << *fencing_token << ", not the "
              << share->second.fencing_token << " it holds the attempt with; its share is kept"
              << std::endl;
    return;
  }
  it->second.attempts.erase(share);
}

void Dispatcher::CancelOtherNodes(int64_t attempt_id, const std::string& except,
                                  const std::string& why) {
  std::vector<std::string> holders;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, w] : workers_) {
      if (id != except && w.attempts.count(attempt_id)) holders.push_back(id);
    }
  }
  for (const std::string& id : holders) {
    std::cerr << "ablate-coordinator: cancelling attempt " << attempt_id << " on worker " << id
              << " (" << why << ")" << std::endl;
    SendTo(id, CancelOf(attempt_id, options_.cancel_grace_ms, why));
  }
}

void Dispatcher::SendTo(const std::string& worker_id, const v1::CoordinatorMessage& msg) {
  std::shared_ptr<WorkerSession> session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workers_.find(worker_id);
    if (it != workers_.end()) session = it->second.session;
  }
  // A lost message is recovered by the lease: the attempt is requeued if the worker never acts.
  if (session) session->Send(msg);
}

}  // namespace ablate
