// Dispatcher over a real in-memory store with fake worker sessions and a fake clock: gang
// assignments and the NCCL id relay, leases, fencing of stale writers, reconnects, and gangs
// across a coordinator restart (a store file reopened under a new dispatcher).
#include "server/dispatch/dispatcher.h"

#include <gtest/gtest.h>

#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/sweep/sweep_spec.h"
#include "tests/util/subprocess.h"

namespace ablate {
namespace {

class FakeSession : public WorkerSession {
 public:
  bool Send(const v1::CoordinatorMessage& msg) override {
    absl::MutexLock lock(&mu_);
    sent_.push_back(msg);
    return true;
  }
  std::vector<v1::CoordinatorMessage> Take() {
    absl::MutexLock lock(&mu_);
    return std::exchange(sent_, {});
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::CoordinatorMessage> sent_ ABSL_GUARDED_BY(mu_);
};

v1::Hello HelloOf(const std::string& id, int gpus, int cpu_slots) {
  v1::Hello h;
  h.set_worker_id(id);
  h.set_host(id + ".local");
  for (int i = 0; i < gpus; ++i) {
    v1::Gpu* g = h.add_gpus();
    g->set_index(i);
    g->set_model("H100");
  }
  h.set_cpu_slots(cpu_slots);
  h.add_datasets("d");
  return h;
}

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(":memory:"); }

  // A store at `store_path` and a dispatcher over it, both on the fake clock.
  void Open(const std::string& store_path) {
    StoreOptions so;
    so.clock = &clock_;
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(store_path, so);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    DispatcherOptions o;
    o.lease_ms = 1000;
    o.clock = &clock_;
    dispatcher_ = std::make_unique<Dispatcher>(store_.get(), &feed_, o);
  }

  int64_t Submit(int gpus_per_run, int seeds, const std::string& more = "") {
    std::string spec = "name: t\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: " +
                       std::to_string(seeds) + "\ngpus_per_run: " + std::to_string(gpus_per_run) +
                       "\ndataset: d\n" + more;
    absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(spec, "t.yaml");
    EXPECT_TRUE(e.ok()) << e.status();
    return *store_->CreateSweep(e->sweep, e->variants, e->runs);
  }

  std::shared_ptr<FakeSession> Connect(const v1::Hello& hello) {
    auto s = std::make_shared<FakeSession>();
    absl::StatusOr<v1::Welcome> w = dispatcher_->Register(hello, s);
    EXPECT_TRUE(w.ok()) << w.status();
    return s;
  }

  static std::vector<v1::Assignment> Assignments(const std::vector<v1::CoordinatorMessage>& m) {
    std::vector<v1::Assignment> out;
    for (const auto& x : m) {
      if (x.has_assignment()) out.push_back(x.assignment());
    }
    return out;
  }

  // One node of a gang placed by PlaceGang: its worker, its stream and its Assignment.
  struct GangMember {
    std::string worker_id;
    std::shared_ptr<FakeSession> session;
    v1::Assignment assignment;
  };

  // Workers a and b (8 GPUs each) and one 16-GPU run over both; indexed by node rank. The Welcomes
  // and Assignments are taken off the sessions.
  std::vector<GangMember> PlaceGang() {
    std::vector<GangMember> nodes = {{"a", Connect(HelloOf("a", 8, 0)), {}},
                                     {"b", Connect(HelloOf("b", 8, 0)), {}}};
    Submit(/*gpus_per_run=*/16, /*seeds=*/1);
    dispatcher_->ScheduleOnce();
    for (GangMember& n : nodes) {
      std::vector<v1::Assignment> got = Assignments(n.session->Take());
      EXPECT_EQ(got.size(), 1u) << "worker " << n.worker_id;
      if (!got.empty()) n.assignment = got[0];
    }
    if (nodes[1].assignment.node_rank() == 0) std::swap(nodes[0], nodes[1]);
    EXPECT_EQ(nodes[1].assignment.node_rank(), 1);
    return nodes;
  }

  static v1::RunFinished FinishedOf(const v1::Assignment& a, const std::string& status,
                                    const std::string& error, int64_t steps) {
    v1::RunFinished f;
    f.set_attempt_id(a.attempt_id());
    f.set_fencing_token(a.fencing_token());
    f.set_status(status);
    f.set_exit_code(status == "ok" || status == "cancelled" ? 0 : 1);
    f.set_error(error);
    f.mutable_summary()->set_steps(steps);
    return f;
  }

  // The reply to a RunFinished is exactly one Ack with finished = true for its attempt.
  static void ExpectFinishedAck(const std::vector<v1::CoordinatorMessage>& reply,
                                int64_t attempt_id) {
    ASSERT_EQ(reply.size(), 1u);
    ASSERT_TRUE(reply[0].has_ack());
    EXPECT_EQ(reply[0].ack().attempt_id(), attempt_id);
    EXPECT_TRUE(reply[0].ack().finished());
  }

  static std::vector<v1::Cancel> Cancels(const std::vector<v1::CoordinatorMessage>& m) {
    std::vector<v1::Cancel> out;
    for (const auto& x : m) {
      if (x.has_cancel()) out.push_back(x.cancel());
    }
    return out;
  }

  // Gang `g` (PlaceGang) holds every GPU; an 8-GPU run waits. Node 1's ok frees node 1 only
  // (the 8-GPU run lands there) and leaves the run `before`; node 0's ok succeeds the run with
  // node 0's summary. Nobody is cancelled.
  void ExpectGangFinishesByTheRules(const std::vector<GangMember>& g, RunState before) {
    const v1::Assignment& as = g[0].assignment;
    Submit(/*gpus_per_run=*/8, /*seeds=*/1);
    dispatcher_->ScheduleOnce();
    EXPECT_TRUE(Assignments(g[0].session->Take()).empty());
    EXPECT_TRUE(Assignments(g[1].session->Take()).empty()) << "every GPU is taken by the gang";

    ExpectFinishedAck(
        dispatcher_->OnRunFinished(g[1].worker_id, FinishedOf(g[1].assignment, "ok", "", 111)),
        as.attempt_id());
    ablate::Run run = *store_->GetRun(as.run_id());
    EXPECT_EQ(run.state, before) << "node 0 has not reported yet";
    EXPECT_EQ(run.summary.steps, 0);
    EXPECT_EQ(OnlyAttempt(as.run_id()).state,
              before == RunState::kRunning ? AttemptState::kRunning : AttemptState::kAssigned);
    dispatcher_->ScheduleOnce();  // node 1's 8 GPUs are free now, node 0's are not
    EXPECT_TRUE(Assignments(g[0].session->Take()).empty());
    std::vector<v1::Assignment> next = Assignments(g[1].session->Take());
    ASSERT_EQ(next.size(), 1u);
    EXPECT_NE(next[0].run_id(), as.run_id());
    EXPECT_EQ(next[0].gpus_size(), 8);

    // The summary is checked against the stored points: node 0 stores the curve it claims.
    ExpectAcked(dispatcher_->OnMetrics(g[0].worker_id, CurveBatch(as, 1, 0, 300, 3.27)), 1);
    v1::RunFinished done = FinishedOf(as, "ok", "", 300);
    done.mutable_summary()->set_final_val_loss(3.27);
    done.set_last_batch_seq(1);
    ExpectFinishedAck(dispatcher_->OnRunFinished(g[0].worker_id, done), as.attempt_id());
    run = *store_->GetRun(as.run_id());
    EXPECT_EQ(run.state, RunState::kSucceeded);
    EXPECT_EQ(run.summary.steps, 300);
    EXPECT_EQ(run.summary.final_val_loss, 3.27);
    EXPECT_EQ(OnlyAttempt(as.run_id()).state, AttemptState::kSucceeded);
    EXPECT_TRUE(Cancels(g[0].session->Take()).empty());
    EXPECT_TRUE(Cancels(g[1].session->Take()).empty());
  }

  // The gang's attempt was lost (the run requeued, its retry budget untouched) and `other`, the
  // node still holding it, got one Cancel saying `reason`; its answer to it changes nothing.
  void ExpectLostAndCancelled(const GangMember& other, const std::string& reason) {
    const v1::Assignment& as = other.assignment;
    EXPECT_EQ(OnlyAttempt(as.run_id()).state, AttemptState::kLost);
    ablate::Run run = *store_->GetRun(as.run_id());
    EXPECT_EQ(run.state, RunState::kQueued);
    EXPECT_EQ(run.attempts_used, 0);
    std::vector<v1::Cancel> cancels = Cancels(other.session->Take());
    ASSERT_EQ(cancels.size(), 1u);
    EXPECT_EQ(cancels[0].attempt_id(), as.attempt_id());
    EXPECT_EQ(cancels[0].reason(), reason);
    ExpectFinishedAck(
        dispatcher_->OnRunFinished(other.worker_id, FinishedOf(as, "cancelled", "", 4)),
        as.attempt_id());
    EXPECT_EQ(OnlyAttempt(as.run_id()).state, AttemptState::kLost);
    EXPECT_TRUE(dispatcher_->RunsByWorker()[other.worker_id].empty());
  }

  // Batch `seq` of the attempt with train points at steps from..to and a val point (`val`) at `to`.
  static v1::MetricBatch CurveBatch(const v1::Assignment& a, int64_t seq, int64_t from, int64_t to,
                                    double val) {
    v1::MetricBatch b;
    b.set_attempt_id(a.attempt_id());
    b.set_fencing_token(a.fencing_token());
    b.set_seq(seq);
    for (int64_t step = from; step <= to; ++step) {
      v1::MetricPoint* p = b.add_points();
      p->set_step(step);
      p->set_train_loss(4.0);
      p->set_train_time_ms(10.0 * static_cast<double>(step));
      p->set_step_ms(10.0);
    }
    b.mutable_points(b.points_size() - 1)->set_val_loss(val);
    return b;
  }

  // The reply is exactly one Ack of `seq`, not finished.
  static void ExpectAcked(const std::vector<v1::CoordinatorMessage>& reply, int64_t seq) {
    ASSERT_EQ(reply.size(), 1u);
    ASSERT_TRUE(reply[0].has_ack());
    EXPECT_EQ(reply[0].ack().seq(), seq);
    EXPECT_FALSE(reply[0].ack().finished());
  }

  Attempt OnlyAttempt(int64_t run_id) {
    std::vector<Attempt> attempts = *store_->ListAttempts(run_id);
    EXPECT_EQ(attempts.size(), 1u);
    return attempts.empty() ? Attempt{} : attempts[0];
  }

  ManualClock clock_{/*wall_ms=*/1'000'000};
  ChangeFeed feed_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

// The worker closes a stream whose first answer is not a Welcome, so the Welcome goes out on the
// session before the scheduler can see it, even with runs waiting for exactly this worker.
TEST_F(DispatcherTest, TheWelcomeIsTheFirstMessageOnANewSession) {
  Submit(/*gpus_per_run=*/0, /*seeds=*/2);
  auto s = Connect(HelloOf("a", 0, 2));
  dispatcher_->ScheduleOnce();
  std::vector<v1::CoordinatorMessage> sent = s->Take();
  ASSERT_GE(sent.size(), 3u);
  EXPECT_TRUE(sent[0].has_welcome());
  EXPECT_EQ(Assignments(sent).size(), 2u);
  for (size_t i = 1; i < sent.size(); ++i) EXPECT_FALSE(sent[i].has_welcome());
}

TEST_F(DispatcherTest, GangRunSpansTwoNodesAndRelaysTheNcclId) {
  auto a = Connect(HelloOf("a", 8, 0));
  auto b = Connect(HelloOf("b", 8, 0));
  Submit(/*gpus_per_run=*/16, /*seeds=*/1);
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> on_a = Assignments(a->Take()), on_b = Assignments(b->Take());
  ASSERT_EQ(on_a.size(), 1u);
  ASSERT_EQ(on_b.size(), 1u);
  EXPECT_EQ(on_a[0].attempt_id(), on_b[0].attempt_id());
  EXPECT_EQ(on_a[0].num_nodes(), 2);
  EXPECT_EQ(on_a[0].node_rank() + on_b[0].node_rank(), 1);
  EXPECT_EQ(on_a[0].gpus_size(), 8);
  EXPECT_EQ(on_b[0].gpus_size(), 8);
  const bool a_is_rank0 = on_a[0].node_rank() == 0;
  v1::NcclId id;
  id.set_attempt_id(on_a[0].attempt_id());
  id.set_unique_id(std::string(128, '\x07'));
  dispatcher_->OnNcclId(a_is_rank0 ? "a" : "b", id);
  std::vector<v1::CoordinatorMessage> relayed = (a_is_rank0 ? b : a)->Take();
  ASSERT_EQ(relayed.size(), 1u);
  EXPECT_EQ(relayed[0].nccl_id().unique_id(), std::string(128, '\x07'));
  EXPECT_TRUE((a_is_rank0 ? a : b)->Take().empty()) << "the sender does not get its own id";
}

TEST_F(DispatcherTest, SilentWorkerLosesItsAttemptsAndStaleWritesAreRefused) {
  auto a = Connect(HelloOf("a", 0, 1));
  Submit(0, 1);
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> first = Assignments(a->Take());
  ASSERT_EQ(first.size(), 1u);
  clock_.Advance(1500);  // past the lease, no heartbeat
  dispatcher_->ExpireLeases();
  ablate::Run run = *store_->GetRun(first[0].run_id());
  EXPECT_EQ(run.state, RunState::kQueued);
  EXPECT_EQ(run.attempts_used, 0);
  auto b = Connect(HelloOf("b", 0, 1));
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> second = Assignments(b->Take());
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0].fencing_token(), first[0].fencing_token());

  v1::MetricBatch stale;
  stale.set_attempt_id(first[0].attempt_id());
  stale.set_fencing_token(first[0].fencing_token());
  stale.set_seq(1);
  stale.add_points()->set_step(1);
  std::vector<v1::CoordinatorMessage> replies = dispatcher_->OnMetrics("a", stale);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_TRUE(replies[0].has_ack());
  EXPECT_TRUE(replies[1].has_cancel());
  EXPECT_EQ(store_->GetMetrics(first[0].run_id(), 0)->total_points, 0);

  v1::MetricBatch current = stale;
  current.set_attempt_id(second[0].attempt_id());
  current.set_fencing_token(second[0].fencing_token());
  replies = dispatcher_->OnMetrics("b", current);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].ack().seq(), 1);
  EXPECT_EQ(dispatcher_->OnMetrics("b", current).size(), 1u) << "a resend is acknowledged again";
  EXPECT_EQ(store_->GetMetrics(first[0].run_id(), 0)->total_points, 1);
}

// Issue 17: a sweep's checkpoint_every reaches the worker in every Assignment; a requeued run's
// Assignment says how far its stored curve reaches (a resume may not start beyond it), and the
// new attempt's batches record where its trainer resumed.
TEST_F(DispatcherTest, CheckpointSweepsTellWorkersThePeriodAndWhereAResumeMayStart) {
  auto a = Connect(HelloOf("a", 0, 1));
  Submit(0, 1, "checkpoint_every: 10m\n");
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> first = Assignments(a->Take());
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].checkpoint_every_ms(), 600000);
  EXPECT_EQ(first[0].resume_max_step(), 0) << "nothing stored yet";
  v1::MetricBatch batch;
  batch.set_attempt_id(first[0].attempt_id());
  batch.set_fencing_token(first[0].fencing_token());
  batch.set_seq(1);
  for (int step = 0; step <= 12; ++step) {
    v1::MetricPoint* p = batch.add_points();
    p->set_step(step);
    if (step > 0) p->set_train_loss(5.0);
    if (step % 10 == 0) p->set_val_loss(5.5);
  }
  ASSERT_EQ(dispatcher_->OnMetrics("a", batch).size(), 1u);
  clock_.Advance(1500);  // past the lease: a is lost, the run requeued
  dispatcher_->ExpireLeases();
  auto b = Connect(HelloOf("b", 0, 1));
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> second = Assignments(b->Take());
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].checkpoint_every_ms(), 600000);
  EXPECT_EQ(second[0].resume_max_step(), 11) << "step 12 is stored without its validation";

  v1::MetricBatch resumed;
  resumed.set_attempt_id(second[0].attempt_id());
  resumed.set_fencing_token(second[0].fencing_token());
  resumed.set_seq(1);
  resumed.set_resumed_from_step(10);
  for (int step = 11; step <= 14; ++step) resumed.add_points()->set_step(step);
  ASSERT_EQ(dispatcher_->OnMetrics("b", resumed).size(), 1u);
  EXPECT_EQ(store_->GetAttempt(second[0].attempt_id())->resumed_from_step, 10);
  std::vector<MetricPoint> curve = *store_->ListMetricPoints(second[0].run_id(), -1, 0);
  ASSERT_EQ(curve.size(), 15u);
  EXPECT_TRUE(curve[10].val_loss.has_value()) << "the first attempt's step 10";
  EXPECT_FALSE(curve[12].train_loss.has_value()) << "the resumed attempt's step 12";

  // A batch that says it resumed beyond the run's steps is refused and fails the attempt.
  resumed.set_seq(2);
  resumed.set_resumed_from_step(100000);
  std::vector<v1::CoordinatorMessage> refused = dispatcher_->OnMetrics("b", resumed);
  ASSERT_EQ(Cancels(refused).size(), 1u);
  EXPECT_NE(Cancels(refused)[0].reason().find("resumed_from_step 100000 is outside"),
            std::string::npos)
      << Cancels(refused)[0].reason();
}

TEST_F(DispatcherTest, SweepsWithoutCheckpointsSendNone) {
  auto a = Connect(HelloOf("a", 0, 1));
  Submit(0, 1);
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> got = Assignments(a->Take());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].checkpoint_every_ms(), 0);
  EXPECT_EQ(got[0].resume_max_step(), 0);
}

TEST_F(DispatcherTest, ReconnectKeepsHeldAttemptsAndNamesStaleOnes) {
  v1::Hello hello = HelloOf("a", 0, 2);
  auto s1 = Connect(hello);
  Submit(0, 1);
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> got = Assignments(s1->Take());
  ASSERT_EQ(got.size(), 1u);
  dispatcher_->Unregister("a", s1.get());
  v1::HeldAttempt* held = hello.add_running();
  held->set_run_id(got[0].run_id());
  held->set_attempt_id(got[0].attempt_id());
  held->set_fencing_token(got[0].fencing_token());
  v1::HeldAttempt* unknown = hello.add_running();
  unknown->set_attempt_id(9999);
  auto s2 = std::make_shared<FakeSession>();
  absl::StatusOr<v1::Welcome> w = dispatcher_->Register(hello, s2);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->stale_attempt_ids_size(), 1);
  EXPECT_EQ(w->stale_attempt_ids(0), 9999);
  clock_.Advance(5000);
  dispatcher_->OnHeartbeat("a");
  dispatcher_->ExpireLeases();
  EXPECT_EQ(store_->GetRun(got[0].run_id())->state, RunState::kAssigned);
  EXPECT_EQ(dispatcher_->RunsByWorker()["a"], std::vector<int64_t>{got[0].run_id()});
}

TEST_F(DispatcherTest, AResultStillInTheOutboxIsAcceptedAfterReconnect) {
  v1::Hello hello = HelloOf("a", 0, 1);
  auto s1 = Connect(hello);
  Submit(0, 1);
  dispatcher_->ScheduleOnce();
  v1::Assignment a = Assignments(s1->Take()).at(0);
  dispatcher_->Unregister("a", s1.get());
  auto s2 = Connect(hello);  // the trainer finished meanwhile: nothing held
  v1::RunFinished done;
  done.set_attempt_id(a.attempt_id());
  done.set_fencing_token(a.fencing_token());
  done.set_status("ok");
  done.mutable_summary()->set_steps(300);
  std::vector<v1::CoordinatorMessage> r = dispatcher_->OnRunFinished("a", done);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].ack().finished());
  EXPECT_EQ(store_->GetRun(a.run_id())->state, RunState::kSucceeded);
}

// A result under a fencing token other than the one the worker holds the attempt with is refused
// by the store, and the share stays: the trainer may still be running on that slot.
TEST_F(DispatcherTest, AResultWithAnotherFencingTokenDoesNotFreeTheSlot) {
  auto s = Connect(HelloOf("a", 0, 1));
  Submit(0, 2);
  dispatcher_->ScheduleOnce();
  v1::Assignment a = Assignments(s->Take()).at(0);
  v1::RunFinished wrong;
  wrong.set_attempt_id(a.attempt_id());
  wrong.set_fencing_token(a.fencing_token() + 1);
  wrong.set_status("ok");
  wrong.mutable_summary()->set_steps(300);
  dispatcher_->OnRunFinished("a", wrong);
  EXPECT_EQ(store_->GetRun(a.run_id())->state, RunState::kAssigned);
  EXPECT_EQ(dispatcher_->RunsByWorker()["a"], std::vector<int64_t>{a.run_id()});
  dispatcher_->ScheduleOnce();
  EXPECT_TRUE(Assignments(s->Take()).empty()) << "the slot is still taken";
  // The holder's own result frees it.
  wrong.set_fencing_token(a.fencing_token());
  dispatcher_->OnRunFinished("a", wrong);
  EXPECT_EQ(store_->GetRun(a.run_id())->state, RunState::kSucceeded);
  dispatcher_->ScheduleOnce();
  EXPECT_EQ(Assignments(s->Take()).size(), 1u);
}

TEST_F(DispatcherTest, GangNodeOneFailureFailsTheAttemptAndCancelsNodeZero) {
  std::vector<GangMember> g = PlaceGang();
  const v1::Assignment& as = g[1].assignment;
  ExpectFinishedAck(
      dispatcher_->OnRunFinished(g[1].worker_id, FinishedOf(as, "failed", "injected failure", 7)),
      as.attempt_id());
  const std::string error = "node 1 of 2 (worker " + g[1].worker_id + "): injected failure";
  Attempt attempt = OnlyAttempt(as.run_id());
  EXPECT_EQ(attempt.state, AttemptState::kFailed);
  EXPECT_EQ(attempt.error, error);
  ablate::Run run = *store_->GetRun(as.run_id());
  EXPECT_EQ(run.attempts_used, 1);
  EXPECT_EQ(run.state, RunState::kQueued);  // 1 of 3 attempts used
  EXPECT_EQ(run.summary.steps, 0) << "only node 0's summary is the run's";

  std::vector<v1::Cancel> cancels = Cancels(g[0].session->Take());
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].attempt_id(), as.attempt_id());
  EXPECT_EQ(cancels[0].reason(), error);
  EXPECT_TRUE(g[1].session->Take().empty()) << "the failed node is not cancelled";
  // Node 0 keeps its share (its trainer is stopping) until it reports; then nothing is held.
  std::map<std::string, std::vector<int64_t>> held = dispatcher_->RunsByWorker();
  EXPECT_EQ(held[g[0].worker_id], std::vector<int64_t>{as.run_id()});
  EXPECT_TRUE(held[g[1].worker_id].empty());
  ExpectFinishedAck(
      dispatcher_->OnRunFinished(g[0].worker_id, FinishedOf(g[0].assignment, "cancelled", "", 7)),
      as.attempt_id());
  EXPECT_EQ(OnlyAttempt(as.run_id()).error, error) << "the first failure stays the attempt's";
  EXPECT_EQ(OnlyAttempt(as.run_id()).state, AttemptState::kFailed);
  held = dispatcher_->RunsByWorker();
  EXPECT_TRUE(held[g[0].worker_id].empty());
  EXPECT_TRUE(Cancels(g[1].session->Take()).empty());
}

TEST_F(DispatcherTest, GangSucceedsWithNodeZerosSummaryAndFreesEachNodeAtItsFinish) {
  std::vector<GangMember> g = PlaceGang();
  ExpectGangFinishesByTheRules(g, RunState::kAssigned);
}

TEST_F(DispatcherTest, GangNodeZeroFailureCancelsTheOtherNode) {
  std::vector<GangMember> g = PlaceGang();
  const v1::Assignment& as = g[0].assignment;
  ExpectFinishedAck(dispatcher_->OnRunFinished(g[0].worker_id, FinishedOf(as, "nan", "", 9)),
                    as.attempt_id());
  const std::string error =
      "node 0 of 2 (worker " + g[0].worker_id + "): loss became NaN or infinite";
  Attempt attempt = OnlyAttempt(as.run_id());
  EXPECT_EQ(attempt.state, AttemptState::kFailed);
  EXPECT_EQ(attempt.error, error);
  EXPECT_EQ(store_->GetRun(as.run_id())->attempts_used, 1);
  std::vector<v1::Cancel> cancels = Cancels(g[1].session->Take());
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].attempt_id(), as.attempt_id());
  EXPECT_EQ(cancels[0].reason(), error);
  EXPECT_TRUE(g[0].session->Take().empty());
}

// A node whose worker stopped its trainer (shutdown) breaks the gang without the run being at
// fault: requeued without using the retry budget, as for one node, and node 0 is cancelled.
TEST_F(DispatcherTest, GangNodeCancelledRequeuesWithoutCountingAndCancelsNodeZero) {
  std::vector<GangMember> g = PlaceGang();
  const v1::Assignment& as = g[1].assignment;
  ExpectFinishedAck(dispatcher_->OnRunFinished(g[1].worker_id, FinishedOf(as, "cancelled", "", 2)),
                    as.attempt_id());
  Attempt attempt = OnlyAttempt(as.run_id());
  EXPECT_EQ(attempt.state, AttemptState::kCancelled);
  EXPECT_EQ(attempt.error, "node 1 of 2 (worker " + g[1].worker_id + "): cancelled");
  ablate::Run run = *store_->GetRun(as.run_id());
  EXPECT_EQ(run.state, RunState::kQueued);
  EXPECT_EQ(run.attempts_used, 0);
  std::vector<v1::Cancel> cancels = Cancels(g[0].session->Take());
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].attempt_id(), as.attempt_id());
}

TEST_F(DispatcherTest, LostGangNodeCancelsTheOtherNode) {
  std::vector<GangMember> g = PlaceGang();
  clock_.Advance(1500);  // past the lease; only node 0's worker is heard from
  dispatcher_->OnHeartbeat(g[0].worker_id);
  dispatcher_->ExpireLeases();
  ExpectLostAndCancelled(g[0], "node 1 of 2 (worker " + g[1].worker_id +
                                   ") lost: no heartbeat or result within the lease");
}

// A node other than 0 that reconnects still holding its share keeps it, as node 1.
TEST_F(DispatcherTest, GangNodeReconnectKeepsItsShareAndRank) {
  std::vector<GangMember> g = PlaceGang();
  const v1::Assignment& as = g[1].assignment;
  dispatcher_->Unregister(g[1].worker_id, g[1].session.get());
  v1::Hello hello = HelloOf(g[1].worker_id, 8, 0);
  v1::HeldAttempt* held = hello.add_running();
  held->set_run_id(as.run_id());
  held->set_attempt_id(as.attempt_id());
  held->set_fencing_token(as.fencing_token());
  for (int gpu : as.gpus()) held->add_gpus(gpu);
  auto s2 = std::make_shared<FakeSession>();
  absl::StatusOr<v1::Welcome> w = dispatcher_->Register(hello, s2);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->stale_attempt_ids_size(), 0);
  EXPECT_EQ(dispatcher_->RunsByWorker()[g[1].worker_id], std::vector<int64_t>{as.run_id()});
  dispatcher_->OnRunFinished(g[1].worker_id, FinishedOf(as, "failed", "NCCL error", 3));
  EXPECT_EQ(OnlyAttempt(as.run_id()).error,
            "node 1 of 2 (worker " + g[1].worker_id + "): NCCL error");
  EXPECT_EQ(Cancels(g[0].session->Take()).size(), 1u);
}

// Node 1's trainer emits the same points as node 0's, numbered by its own worker: they must not
// take node 0's seqs.
TEST_F(DispatcherTest, GangMetricsAreStoredFromNodeZeroOnly) {
  std::vector<GangMember> g = PlaceGang();
  auto batch = [](const v1::Assignment& a, int64_t step) {
    v1::MetricBatch b;
    b.set_attempt_id(a.attempt_id());
    b.set_fencing_token(a.fencing_token());
    b.set_seq(1);
    b.add_points()->set_step(step);
    return b;
  };
  std::vector<v1::CoordinatorMessage> r =
      dispatcher_->OnMetrics(g[1].worker_id, batch(g[1].assignment, 5));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].ack().seq(), 1);
  EXPECT_EQ(store_->GetMetrics(g[0].assignment.run_id(), 0)->total_points, 0);
  r = dispatcher_->OnMetrics(g[0].worker_id, batch(g[0].assignment, 1));
  ASSERT_EQ(r.size(), 1u);
  MetricCurve curve = *store_->GetMetrics(g[0].assignment.run_id(), 0);
  ASSERT_EQ(curve.total_points, 1);
  EXPECT_EQ(curve.points[0].step, 1);
}

// Issue 24, the ack contract: Ack(seq) means every batch up to seq is committed. A batch that is
// missing (it failed to commit, or was lost) holds the acknowledgement back however many later
// batches commit, and a result waits until every batch it follows is committed.
TEST_F(DispatcherTest, OnlyTheCommittedPrefixIsAcknowledgedAndAResultWaitsForItsBatches) {
  auto s = Connect(HelloOf("a", 0, 1));
  Submit(0, 1);
  dispatcher_->ScheduleOnce();
  v1::Assignment a = Assignments(s->Take()).at(0);
  ExpectAcked(dispatcher_->OnMetrics("a", CurveBatch(a, 1, 0, 9, 5.0)), 1);
  // Batch 2 is not committed: 3 is stored but not acknowledged.
  ExpectAcked(dispatcher_->OnMetrics("a", CurveBatch(a, 3, 20, 29, 4.5)), 1);
  ExpectAcked(dispatcher_->OnMetrics("a", CurveBatch(a, 4, 30, 39, 4.4)), 1);
  v1::RunFinished done = FinishedOf(a, "ok", "", 39);
  done.set_last_batch_seq(5);
  EXPECT_TRUE(dispatcher_->OnRunFinished("a", done).empty())
      << "the result waits for batches 2 and 5";
  EXPECT_EQ(store_->GetRun(a.run_id())->state, RunState::kAssigned);
  ExpectAcked(dispatcher_->OnMetrics("a", CurveBatch(a, 2, 10, 19, 4.6)), 4);
  ExpectAcked(dispatcher_->OnMetrics("a", CurveBatch(a, 3, 20, 29, 4.5)), 4);  // a resend
  EXPECT_TRUE(dispatcher_->OnRunFinished("a", done).empty()) << "batch 5 is still missing";
  ExpectAcked(dispatcher_->OnMetrics("a", CurveBatch(a, 5, 40, 49, 4.3)), 5);
  ExpectFinishedAck(dispatcher_->OnRunFinished("a", done), a.attempt_id());
  ablate::Run run = *store_->GetRun(a.run_id());
  EXPECT_EQ(run.state, RunState::kSucceeded);
  EXPECT_EQ(store_->GetMetrics(a.run_id(), 0)->total_points, 50);
}

// After a coordinator restart the committed prefix comes from the store: the worker resends only
// what was not acknowledged, and the Ack still covers the batches committed before the restart.
TEST_F(DispatcherTest, TheCommittedPrefixIsReadFromTheStoreWhenNotKnown) {
  auto s = Connect(HelloOf("a", 0, 1));
  Submit(0, 1);
  dispatcher_->ScheduleOnce();
  v1::Assignment a = Assignments(s->Take()).at(0);
  std::vector<MetricPoint> points(1);
  for (int64_t seq : {1, 2, 4}) {
    points[0].step = seq;
    ASSERT_TRUE(
        store_->AppendMetrics(a.run_id(), a.attempt_id(), a.fencing_token(), seq, points).ok());
  }
  ExpectAcked(dispatcher_->OnMetrics("a", CurveBatch(a, 3, 3, 3, 4.0)), 4);
}

// Issue 24: a worker is trusted with the attempts it holds and nothing else. A second worker that
// knows another worker's attempt id and fencing token changes nothing of that run.
TEST_F(DispatcherTest, AWorkerThatDoesNotHoldAnAttemptChangesNothingOfIt) {
  auto victim = Connect(HelloOf("victim", 0, 1));
  Submit(0, 1);
  dispatcher_->ScheduleOnce();
  v1::Assignment a = Assignments(victim->Take()).at(0);
  auto evil = Connect(HelloOf("evil", 0, 0));
  v1::RunStarted started;
  started.set_attempt_id(a.attempt_id());
  started.set_fencing_token(a.fencing_token());
  dispatcher_->OnRunStarted("evil", started);
  std::vector<v1::CoordinatorMessage> r =
      dispatcher_->OnMetrics("evil", CurveBatch(a, 1, 0, 9, 1.0));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].ack().seq(), 1);
  EXPECT_NE(r[1].cancel().reason().find("does not hold"), std::string::npos)
      << r[1].cancel().reason();
  r = dispatcher_->OnRunFinished("evil", FinishedOf(a, "failed", "evil", 0));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].ack().finished());
  v1::NcclId id;
  id.set_attempt_id(a.attempt_id());
  dispatcher_->OnNcclId("evil", id);
  EXPECT_TRUE(victim->Take().empty()) << "nothing relayed to the victim";
  EXPECT_EQ(store_->GetMetrics(a.run_id(), 0)->total_points, 0);
  ablate::Run run = *store_->GetRun(a.run_id());
  EXPECT_EQ(run.state, RunState::kAssigned);
  EXPECT_EQ(run.attempts_used, 0);
  EXPECT_EQ(OnlyAttempt(a.run_id()).state, AttemptState::kAssigned);
  // The holder's own batch with the same seq is stored, not dropped as a duplicate.
  ExpectAcked(dispatcher_->OnMetrics("victim", CurveBatch(a, 1, 0, 9, 5.0)), 1);
  EXPECT_EQ(store_->GetMetrics(a.run_id(), 0)->total_points, 10);
}

// Issue 24: a summary is never taken on the worker's word. With no point stored, a claimed
// 2^62 steps, final val loss 0.001 and time to target 1 ms leave an empty summary.
TEST_F(DispatcherTest, ASummaryTheStoredPointsDoNotSupportIsNotStored) {
  auto s = Connect(HelloOf("a", 0, 2));
  Submit(0, 2);
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> got = Assignments(s->Take());
  ASSERT_EQ(got.size(), 2u);
  v1::RunFinished lie = FinishedOf(got[0], "ok", "", int64_t{1} << 62);
  lie.mutable_summary()->set_final_val_loss(0.001);
  lie.mutable_summary()->set_time_to_target_ms(1);
  lie.mutable_summary()->set_target_step(1);
  lie.mutable_summary()->set_reached_target(true);
  lie.mutable_summary()->set_train_time_ms(1);
  ExpectFinishedAck(dispatcher_->OnRunFinished("a", lie), got[0].attempt_id());
  ablate::Run run = *store_->GetRun(got[0].run_id());
  EXPECT_EQ(run.state, RunState::kSucceeded);
  EXPECT_EQ(run.summary.steps, 0);
  EXPECT_FALSE(run.summary.final_val_loss.has_value());
  EXPECT_FALSE(run.summary.reached_target);
  EXPECT_FALSE(run.summary.time_to_target_ms.has_value());
  EXPECT_FALSE(run.summary.train_time_ms.has_value());

  // With points: what they support is kept, the rest replaced by what they say.
  ExpectAcked(dispatcher_->OnMetrics("a", CurveBatch(got[1], 1, 0, 100, 3.5)), 1);
  lie = FinishedOf(got[1], "ok", "", 250);
  lie.set_last_batch_seq(1);
  lie.mutable_summary()->set_final_val_loss(0.001);
  lie.mutable_summary()->set_time_to_target_ms(1);
  lie.mutable_summary()->set_target_step(1);
  lie.mutable_summary()->set_reached_target(true);
  lie.mutable_summary()->set_train_time_ms(5000);
  lie.mutable_summary()->set_mean_step_ms(10);
  ExpectFinishedAck(dispatcher_->OnRunFinished("a", lie), got[1].attempt_id());
  run = *store_->GetRun(got[1].run_id());
  EXPECT_EQ(run.summary.steps, 100);
  EXPECT_EQ(run.summary.final_val_loss, 3.5);
  EXPECT_FALSE(run.summary.reached_target) << "3.5 is above the target";
  EXPECT_EQ(run.summary.train_time_ms, 1000.0);
  EXPECT_EQ(run.summary.mean_step_ms, 10.0);
}

// Issue 24: Hello is bounded and refused, naming the field, before anything of it is stored.
TEST_F(DispatcherTest, AnUnboundedHelloIsRefusedNamingTheFieldAndNothingIsStored) {
  struct Case {
    std::function<void(v1::Hello&)> spoil;
    std::string says;
  };
  const std::vector<Case> cases = {
      {[](v1::Hello& h) { h.set_worker_id(std::string(5 << 20, 'w')); },
       "Hello.worker_id is 5242880 bytes"},
      {[](v1::Hello& h) { h.set_worker_id("w\x1b[31m"); }, "Hello.worker_id has byte 0x1b"},
      {[](v1::Hello& h) { h.set_worker_id("w\nx"); }, "Hello.worker_id has byte 0xa"},
      {[](v1::Hello& h) { h.set_host("evil\xe2\x80\xae" "com"); },
       "Hello.host has a control or bidirectional character"},
      {[](v1::Hello& h) { h.set_host("a\xff"); }, "Hello.host is not UTF-8"},
      {[](v1::Hello& h) { h.set_cpu_slots(-5); }, "Hello.cpu_slots is -5"},
      {[](v1::Hello& h) {
         for (int i = 0; i < 60000; ++i) h.add_datasets("d" + std::to_string(i));
       },
       "60001 datasets, over the limit of 256"},
      {[](v1::Hello& h) {
         for (int i = 0; i < 100000; ++i) h.add_gpus()->set_index(i);
       },
       "the number of GPUs is 100000"},
      {[](v1::Hello& h) {
         h.add_gpus()->set_index(1);
         h.add_gpus()->set_index(1);
       },
       "GPU index 1 appears twice"},
  };
  for (const Case& c : cases) {
    v1::Hello hello = HelloOf("w", 0, 1);
    c.spoil(hello);
    absl::StatusOr<v1::Welcome> w =
        dispatcher_->Register(hello, std::make_shared<FakeSession>());
    ASSERT_FALSE(w.ok()) << c.says;
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(w.status().message().find(c.says), std::string::npos) << w.status();
  }
  EXPECT_TRUE(store_->ListWorkers()->empty());
  EXPECT_TRUE(dispatcher_->Register(HelloOf("slurm/c/12.0/0", 1, 1),
                                    std::make_shared<FakeSession>())
                  .ok());
}

// Issue 24: seq below 1, a step twice in a batch and training time going backwards are refused.
TEST_F(DispatcherTest, BadSeqsDuplicateStepsAndBackwardTimesAreRefused) {
  auto s = Connect(HelloOf("a", 0, 3));
  Submit(0, 3);
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> got = Assignments(s->Take());
  ASSERT_EQ(got.size(), 3u);
  v1::MetricBatch zero = CurveBatch(got[0], 0, 0, 3, 5.0);
  v1::MetricBatch twice = CurveBatch(got[1], 1, 0, 3, 5.0);
  twice.mutable_points(2)->set_step(1);
  v1::MetricBatch backwards = CurveBatch(got[2], 1, 0, 3, 5.0);
  backwards.mutable_points(3)->set_train_time_ms(1);
  const std::vector<std::pair<v1::MetricBatch, std::string>> cases = {
      {zero, "seq 0 is below 1"},
      {twice, "step 1 appears twice in the batch"},
      {backwards, "train_time_ms goes backwards: step 3 has 1 after step 2 had 20"}};
  for (const auto& [batch, says] : cases) {
    std::vector<v1::CoordinatorMessage> r = dispatcher_->OnMetrics("a", batch);
    std::vector<v1::Cancel> cancels = Cancels(r);
    ASSERT_EQ(cancels.size(), 1u) << says;
    EXPECT_NE(cancels[0].reason().find(says), std::string::npos) << cancels[0].reason();
    EXPECT_EQ(OnlyAttempt(batch.attempt_id() == got[0].attempt_id()   ? got[0].run_id()
                          : batch.attempt_id() == got[1].attempt_id() ? got[1].run_id()
                                                                      : got[2].run_id())
                  .state,
              AttemptState::kFailed);
  }
  EXPECT_EQ(store_->GetMetrics(got[0].run_id(), 0)->total_points, 0);
}

// Issue 24: a message that did not parse ends the attempt it names with the reason, answered
// like a refused result so that the worker drops it instead of resending it forever.
TEST_F(DispatcherTest, AnUnparsableMessageEndsItsAttemptWithTheReason) {
  auto s = Connect(HelloOf("a", 0, 1));
  Submit(0, 1);
  dispatcher_->ScheduleOnce();
  v1::Assignment a = Assignments(s->Take()).at(0);
  std::vector<v1::CoordinatorMessage> r = dispatcher_->OnUnparsable(
      "a", a.attempt_id(), a.fencing_token(), "RunFinished.stderr_tail is not valid UTF-8");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].ack().finished());
  EXPECT_NE(r[1].cancel().reason().find("stderr_tail is not valid UTF-8"), std::string::npos);
  Attempt attempt = OnlyAttempt(a.run_id());
  EXPECT_EQ(attempt.state, AttemptState::kFailed);
  EXPECT_NE(attempt.error.find("stderr_tail is not valid UTF-8"), std::string::npos);
  // Another worker's attempt named in an unparsable message changes nothing.
  auto other = Connect(HelloOf("b", 0, 0));
  dispatcher_->ScheduleOnce();  // the run was requeued (1 of 3 attempts used)
  v1::Assignment b = Assignments(s->Take()).at(0);
  dispatcher_->OnUnparsable("b", b.attempt_id(), b.fencing_token(), "x");
  EXPECT_EQ(store_->GetAttempt(b.attempt_id())->state, AttemptState::kAssigned);
}

}  // namespace
}  // namespace ablate

namespace ablate {
namespace {

// Gangs across a coordinator restart: the store lives in a file; a restart closes the store and
// the dispatcher and opens new ones over the same file, so only what the store committed and
// what the workers say in their Hellos is known afterwards.
class DispatcherRestartTest : public DispatcherTest {
 protected:
  void SetUp() override { Open(store_path_); }

  void RestartCoordinator() {
    dispatcher_.reset();
    store_.reset();
    Open(store_path_);
    ASSERT_TRUE(dispatcher_->Start().ok());
    // Start() restored the live attempts; the test drives the scheduling and lease passes itself.
    dispatcher_->Stop();
  }

  // `m`'s Hello after the restart, still running its gang share (Held() of its worker).
  static v1::Hello HoldingHello(const GangMember& m) {
    v1::Hello hello = HelloOf(m.worker_id, 8, 0);
    v1::HeldAttempt* h = hello.add_running();
    h->set_run_id(m.assignment.run_id());
    h->set_attempt_id(m.assignment.attempt_id());
    h->set_fencing_token(m.assignment.fencing_token());
    *h->mutable_gpus() = m.assignment.gpus();
    h->set_node_rank(m.assignment.node_rank());
    h->set_num_nodes(m.assignment.num_nodes());
    return hello;
  }

  // Registers `hello` on a new session for `m`; returns the Welcome's stale attempt ids.
  std::vector<int64_t> Reconnect(GangMember& m, const v1::Hello& hello) {
    m.session = std::make_shared<FakeSession>();
    absl::StatusOr<v1::Welcome> w = dispatcher_->Register(hello, m.session);
    EXPECT_TRUE(w.ok()) << w.status();
    m.session->Take();  // the Welcome
    if (!w.ok()) return {};
    return {w->stale_attempt_ids().begin(), w->stale_attempt_ids().end()};
  }

  ablate::testing::TempDir dir_;
  const std::string store_path_ = dir_.path() + "/ablate.db";
};

TEST_F(DispatcherRestartTest, EveryNodeOfAGangIsKnownAgainAndTheGangFinishesByTheRules) {
  std::vector<GangMember> g = PlaceGang();
  const v1::Assignment as = g[0].assignment;
  v1::RunStarted started;
  started.set_attempt_id(as.attempt_id());
  started.set_fencing_token(as.fencing_token());
  dispatcher_->OnRunStarted(g[0].worker_id, started);
  RestartCoordinator();

  // Node 1 comes back first: before node 0, only the store vouches for the attempt.
  EXPECT_TRUE(Reconnect(g[1], HoldingHello(g[1])).empty()) << "node 1 is not stale";
  EXPECT_TRUE(Reconnect(g[0], HoldingHello(g[0])).empty()) << "node 0 is not stale";
  std::map<std::string, std::vector<int64_t>> held = dispatcher_->RunsByWorker();
  EXPECT_EQ(held[g[0].worker_id], std::vector<int64_t>{as.run_id()});
  EXPECT_EQ(held[g[1].worker_id], std::vector<int64_t>{as.run_id()});
  ExpectGangFinishesByTheRules(g, RunState::kRunning);
}

// A gang whose node 0 does not come back is lost after the restart grace and the lease; the node
// that came back is cancelled (its trainer waits for node 0 in NCCL), and its answer changes
// nothing.
TEST_F(DispatcherRestartTest, GangWhoseNodeZeroNeverReturnsIsLostAndTheOtherNodeCancelled) {
  std::vector<GangMember> g = PlaceGang();
  const v1::Assignment as = g[1].assignment;
  RestartCoordinator();
  EXPECT_TRUE(Reconnect(g[1], HoldingHello(g[1])).empty());
  clock_.Advance(10000);  // within the restart grace (15 s) + lease (1 s)
  dispatcher_->OnHeartbeat(g[1].worker_id);
  dispatcher_->ExpireLeases();
  EXPECT_EQ(store_->GetRun(as.run_id())->state, RunState::kAssigned);
  EXPECT_TRUE(g[1].session->Take().empty());

  clock_.Advance(7000);
  dispatcher_->OnHeartbeat(g[1].worker_id);
  dispatcher_->ExpireLeases();
  ExpectLostAndCancelled(g[1], "node 0 of 2 (worker " + g[0].worker_id +
                                   ") lost: no heartbeat or result within the lease");
}

TEST_F(DispatcherRestartTest, NodeWithAWrongFencingTokenIsStale) {
  std::vector<GangMember> g = PlaceGang();
  RestartCoordinator();
  v1::Hello wrong = HoldingHello(g[1]);
  wrong.mutable_running(0)->set_fencing_token(g[1].assignment.fencing_token() + 1);
  EXPECT_EQ(Reconnect(g[1], wrong), std::vector<int64_t>{g[1].assignment.attempt_id()});
  EXPECT_TRUE(dispatcher_->RunsByWorker()[g[1].worker_id].empty());
  EXPECT_TRUE(Reconnect(g[1], HoldingHello(g[1])).empty()) << "the right token is accepted";
}

// The store names node 0's worker, and a gang's nodes must agree: claims that contradict either
// are stale, and the claims that hold stay.
TEST_F(DispatcherRestartTest, NodeClaimsTheStoreOrTheGangContradictAreStale) {
  std::vector<GangMember> g = PlaceGang();
  const int64_t attempt = g[0].assignment.attempt_id();
  const std::vector<int64_t> stale = {attempt};
  RestartCoordinator();
  auto claim = [&](GangMember m, int rank, int num_nodes) {
    v1::Hello hello = HoldingHello(m);
    hello.mutable_running(0)->set_node_rank(rank);
    hello.mutable_running(0)->set_num_nodes(num_nodes);
    return Reconnect(m, hello);
  };
  EXPECT_EQ(claim(g[1], 0, 2), stale) << "node 0 is the worker the store names";
  EXPECT_EQ(claim(g[0], 1, 2), stale) << "the store's worker is node 0";
  EXPECT_EQ(claim(g[1], 2, 2), stale) << "no node 2 of 2";
  EXPECT_EQ(claim(g[1], 1, 2), std::vector<int64_t>{});
  GangMember c{"c", nullptr, g[1].assignment};
  EXPECT_EQ(claim(c, 1, 2), stale) << "node 1 is held by " << g[1].worker_id;
  EXPECT_EQ(claim(c, 2, 3), stale) << "the gang has 2 nodes";
  EXPECT_EQ(claim(g[0], 0, 3), stale) << "the gang has 2 nodes";
  EXPECT_EQ(claim(g[0], 0, 2), std::vector<int64_t>{});
  std::map<std::string, std::vector<int64_t>> held = dispatcher_->RunsByWorker();
  EXPECT_EQ(held[g[0].worker_id], std::vector<int64_t>{g[0].assignment.run_id()});
  EXPECT_EQ(held[g[1].worker_id], std::vector<int64_t>{g[0].assignment.run_id()});
  EXPECT_TRUE(held["c"].empty());
}

// Node 0 finished the attempt before the restart: another node still holding it must stop.
TEST_F(DispatcherRestartTest, NodeOfAnAttemptNodeZeroFinishedIsStale) {
  std::vector<GangMember> g = PlaceGang();
  ExpectFinishedAck(
      dispatcher_->OnRunFinished(g[0].worker_id, FinishedOf(g[0].assignment, "ok", "", 300)),
      g[0].assignment.attempt_id());
  RestartCoordinator();
  EXPECT_EQ(Reconnect(g[1], HoldingHello(g[1])),
            std::vector<int64_t>{g[1].assignment.attempt_id()});
  EXPECT_TRUE(dispatcher_->RunsByWorker()[g[1].worker_id].empty());
}

// A block's runs prefer one GPU model (issue 16); an attempt taken back from a worker's Hello
// after a coordinator restart still says which block it belongs to.
TEST_F(DispatcherRestartTest, AnAttemptTakenBackAfterARestartKeepsItsBlocksGpuModel) {
  auto on = [](const std::string& id, const std::string& model) {
    v1::Hello h = HelloOf(id, 1, 0);
    h.mutable_gpus(0)->set_model(model);
    return h;
  };
  auto first = Connect(on("h", "H100"));
  absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(
      "name: t\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: 1\ngpus_per_run: 1\n"
      "dataset: d\nablations:\n  - {name: cap, set: {logit_softcap: 15}}\n",
      "t.yaml");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(store_->CreateSweep(e->sweep, e->variants, e->runs).ok());
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> got = Assignments(first->Take());
  ASSERT_EQ(got.size(), 1u);  // block 0 started on the H100; its other run waits
  RestartCoordinator();
  v1::Hello holding = on("h", "H100");
  v1::HeldAttempt* held = holding.add_running();
  held->set_run_id(got[0].run_id());
  held->set_attempt_id(got[0].attempt_id());
  held->set_fencing_token(got[0].fencing_token());
  *held->mutable_gpus() = got[0].gpus();
  ASSERT_TRUE(dispatcher_->Register(holding, std::make_shared<FakeSession>()).ok());
  auto a100 = Connect(on("a100", "A100"));  // first in the scheduler's order
  auto h2 = Connect(on("h2", "H100"));
  a100->Take();
  h2->Take();
  dispatcher_->ScheduleOnce();
  EXPECT_TRUE(Assignments(a100->Take()).empty());
  EXPECT_EQ(Assignments(h2->Take()).size(), 1u) << "the block's other run goes to an H100";
}

}  // namespace
}  // namespace ablate
