// The dispatcher's side of pools (issue 15) over a real in-memory store, fake sessions and a fake
// clock: pool sweeps only on their pool's workers, a gang only within one Slurm allocation,
// Release and fenced allocations requeue without charge, draining workers get nothing; and the
// placement rule that a run does not start in an allocation that ends before it would.
#include <gtest/gtest.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/core/placement.h"
#include "server/core/ssh_worker_id.h"
#include "server/dispatch/dispatcher.h"
#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

class FakeSession : public WorkerSession {
 public:
  bool Send(const v1::CoordinatorMessage& msg) override {
    absl::MutexLock lock(&mu_);
    if (msg.has_assignment()) assignments_.push_back(msg.assignment());
    return true;
  }
  std::vector<v1::Assignment> Take() {
    absl::MutexLock lock(&mu_);
    return std::exchange(assignments_, {});
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::Assignment> assignments_ ABSL_GUARDED_BY(mu_);
};

// A worker with 8 GPUs; in Slurm job `job` (node `node`) of `pool` unless job is 0.
v1::Hello HelloOf(const std::string& pool, int64_t job, int node, int restart = 0) {
  v1::Hello h;
  for (int i = 0; i < 8; ++i) h.add_gpus()->set_index(i);
  h.add_datasets("d");
  if (job == 0) {
    h.set_worker_id("plain");
    return h;
  }
  v1::SlurmAllocation* s = h.mutable_slurm();
  s->set_cluster("lab");
  s->set_job_id(job);
  s->set_restart_count(restart);
  s->set_node_index(node);
  s->set_pool(pool);
  s->set_step_id("0");
  h.set_worker_id("slurm/lab/" + std::to_string(job) + "." + std::to_string(restart) + "/" +
                  std::to_string(node));
  return h;
}

class DispatcherPoolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions so;
    so.clock = &clock_;
    store_ = std::move(Store::Open(":memory:", so)).value();
    DispatcherOptions o;
    o.lease_ms = 100000;
    o.clock = &clock_;
    dispatcher_ = std::make_unique<Dispatcher>(store_.get(), &feed_, o);
  }

  int64_t Submit(int gpus, int seeds, const std::string& pool) {
    std::string spec = "name: t\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: " +
                       std::to_string(seeds) + "\ngpus_per_run: " + std::to_string(gpus) +
                       "\ndataset: d\n" + (pool.empty() ? "" : "pool: " + pool + "\n");
    absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(spec, "t.yaml");
    EXPECT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->sweep.pool, pool);
    int64_t id = *store_->CreateSweep(e->sweep, e->variants, e->runs);
    EXPECT_EQ(store_->GetSweep(id)->pool, pool) << "the pool is stored with the sweep";
    return id;
  }

  std::shared_ptr<FakeSession> Connect(const v1::Hello& hello) {
    auto s = std::make_shared<FakeSession>();
    EXPECT_TRUE(dispatcher_->Register(hello, s).ok());
    return s;
  }

  ablate::Run RunOf(int64_t id) { return *store_->GetRun(id); }

  ManualClock clock_{/*wall_ms=*/1'000'000};
  ChangeFeed feed_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherPoolsTest, PoolSweepsRunOnlyOnTheirPoolsWorkers) {
  auto plain = Connect(HelloOf("", 0, 0));
  auto pilot = Connect(HelloOf("lab", 7, 0));
  Submit(8, 2, "lab");
  Submit(8, 2, "");
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> to_pilot = pilot->Take(), to_plain = plain->Take();
  ASSERT_EQ(to_pilot.size(), 1u);
  ASSERT_EQ(to_plain.size(), 1u);
  EXPECT_EQ(to_pilot[0].sweep_id(), 1);
  EXPECT_EQ(to_plain[0].sweep_id(), 2);
  // The attempt records the Slurm job its worker runs in.
  EXPECT_EQ(store_->GetAttempt(to_pilot[0].attempt_id())->slurm_job_id, 7);
  EXPECT_EQ(store_->GetAttempt(to_pilot[0].attempt_id())->slurm_step_id, "0")
      << "the step its worker runs as, whose child the trainer is";
  EXPECT_EQ(store_->GetAttempt(to_plain[0].attempt_id())->slurm_job_id, 0);
  EXPECT_EQ(store_->GetAttempt(to_plain[0].attempt_id())->slurm_step_id, "");
  // What ListWorkers shows: the pilot's pool and job; the plain worker has no allocation.
  std::map<std::string, WorkerAllocation> allocations = dispatcher_->WorkerAllocations();
  ASSERT_EQ(allocations.size(), 1u);
  EXPECT_EQ(allocations["slurm/lab/7.0/0"].pool, "lab");
  EXPECT_EQ(allocations["slurm/lab/7.0/0"].job_id, 7);
  EXPECT_EQ(allocations["slurm/lab/7.0/0"].ends_ms, 0) << "unknown until squeue says";
  dispatcher_->FenceAllocations("lab", {{7, {0, clock_.WallMs() + 60000}}}, clock_.WallMs() + 1,
                                "gone");
  EXPECT_EQ(dispatcher_->WorkerAllocations()["slurm/lab/7.0/0"].ends_ms, clock_.WallMs() + 60000);
  // A pool without workers: its runs wait, saying so, and never go to other workers.
  Submit(0, 1, "other");
  dispatcher_->ScheduleOnce();
  EXPECT_TRUE(pilot->Take().empty());
  EXPECT_TRUE(plain->Take().empty());
  std::map<int64_t, std::string> waiting = dispatcher_->WaitingReasons();
  EXPECT_EQ(waiting[2], "waiting for 8 free GPUs");
  EXPECT_EQ(waiting[5],
            "no worker of pool 'other' with dataset 'd' and time left for the run is connected");
}

TEST_F(DispatcherPoolsTest, AGangStaysWithinOneAllocation) {
  auto a = Connect(HelloOf("lab", 7, 0));
  auto b = Connect(HelloOf("lab", 8, 0));
  Submit(16, 1, "lab");
  dispatcher_->ScheduleOnce();
  EXPECT_TRUE(a->Take().empty()) << "two nodes of different allocations are not one gang";
  EXPECT_TRUE(b->Take().empty());
  auto a1 = Connect(HelloOf("lab", 7, 1));
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> got0 = a->Take(), got1 = a1->Take();
  ASSERT_EQ(got0.size(), 1u);
  ASSERT_EQ(got1.size(), 1u);
  EXPECT_EQ(got0[0].num_nodes(), 2);
  EXPECT_EQ(got0[0].node_rank() + got1[0].node_rank(), 1);
  EXPECT_TRUE(b->Take().empty());
}

TEST_F(DispatcherPoolsTest, ReleaseRequeuesAtOnceWithoutCharge) {
  auto pilot = Connect(HelloOf("lab", 7, 0));
  Submit(8, 1, "lab");
  dispatcher_->ScheduleOnce();
  std::vector<v1::Assignment> got = pilot->Take();
  ASSERT_EQ(got.size(), 1u);
  v1::Release stale;
  stale.add_attempts()->set_attempt_id(got[0].attempt_id());
  stale.mutable_attempts(0)->set_fencing_token(got[0].fencing_token() + 1);
  dispatcher_->OnRelease("slurm/lab/7.0/0", stale);
  EXPECT_EQ(RunOf(1).state, RunState::kAssigned) << "a stale fencing token releases nothing";
  v1::Release release;
  release.set_reason("worker received SIGTERM");
  v1::ReleasedAttempt* r = release.add_attempts();
  r->set_attempt_id(got[0].attempt_id());
  r->set_fencing_token(got[0].fencing_token());
  dispatcher_->OnRelease("slurm/lab/7.0/0", release);
  ablate::Run run = RunOf(1);
  EXPECT_EQ(run.state, RunState::kQueued);
  EXPECT_EQ(run.attempts_used, 0);
  EXPECT_EQ(store_->GetAttempt(got[0].attempt_id())->state, AttemptState::kLost);
  dispatcher_->ScheduleOnce();
  EXPECT_TRUE(pilot->Take().empty()) << "a worker that released its attempts is stopping";
  auto next = Connect(HelloOf("lab", 9, 0));
  dispatcher_->ScheduleOnce();
  EXPECT_EQ(next->Take().size(), 1u) << "the run goes to a new allocation";
}

TEST_F(DispatcherPoolsTest, AllocationsSqueueNoLongerShowsAreFenced) {
  auto old_pilot = Connect(HelloOf("lab", 7, 0));
  Submit(8, 1, "lab");
  dispatcher_->ScheduleOnce();
  ASSERT_EQ(old_pilot->Take().size(), 1u);
  clock_.Advance(1);
  const int64_t seen = clock_.WallMs();
  clock_.Advance(1);
  auto fresh = Connect(HelloOf("lab", 8, 0));  // registered after that squeue
  std::map<int64_t, Dispatcher::RunningAllocation> running;  // squeue shows neither job
  std::vector<std::string> fenced =
      dispatcher_->FenceAllocations("lab", running, seen, "allocation gone");
  EXPECT_EQ(fenced, std::vector<std::string>{"slurm/lab/7.0/0"});
  EXPECT_EQ(RunOf(1).state, RunState::kQueued);
  EXPECT_EQ(RunOf(1).attempts_used, 0);
  dispatcher_->ScheduleOnce();
  EXPECT_TRUE(old_pilot->Take().empty());
  EXPECT_EQ(fresh->Take().size(), 1u) << "a worker newer than the squeue call is not fenced";
  // A requeued job's new incarnation makes the old one's workers stale.
  running[8] = {/*restart_count=*/1, 0};
  clock_.Advance(1);
  fenced = dispatcher_->FenceAllocations("lab", running, clock_.WallMs(), "requeued");
  EXPECT_EQ(fenced, std::vector<std::string>{"slurm/lab/8.0/0"});
  EXPECT_EQ(RunOf(1).state, RunState::kQueued);
}

// An ssh pool's worker (issue 38): its pool's runs go to it, and it is fenced unless it is
// exactly the start its coordinator made last (a stale or a made-up newer incarnation alike).
v1::Hello SshHello(const std::string& host, int64_t incarnation) {
  v1::Hello h;
  h.set_cpu_slots(1);
  for (int i = 0; i < 8; ++i) h.add_gpus()->set_index(i);
  h.add_datasets("d");
  h.mutable_ssh()->set_pool("rented");
  h.mutable_ssh()->set_host(host);
  h.mutable_ssh()->set_incarnation(incarnation);
  h.set_worker_id(SshWorkerId("rented", host));
  return h;
}

TEST_F(DispatcherPoolsTest, SshWorkersServeTheirPoolAndOnlyTheLastStartSurvivesAFence) {
  auto a = Connect(SshHello("a", 2));
  auto b = Connect(SshHello("b", 5));
  Submit(8, 2, "rented");
  dispatcher_->ScheduleOnce();
  EXPECT_EQ(a->Take().size() + b->Take().size(), 2u);
  clock_.Advance(1);
  std::map<int64_t, Dispatcher::RunningAllocation> running;
  running[SshAllocationId("a")] = {2, 0};
  running[SshAllocationId("b")] = {4, 0};  // b's worker claims a start newer than the last one
  std::vector<std::string> fenced =
      dispatcher_->FenceAllocations("rented", running, clock_.WallMs(), "gone", /*exact=*/true);
  EXPECT_EQ(fenced, std::vector<std::string>{"ssh/rented/b"});
  EXPECT_EQ(dispatcher_->RunsByAllocation("rented").at(SshAllocationId("a")), 1);
  // Without `exact` (Slurm's rule) a newer restart than squeue showed is kept.
  auto c = Connect(SshHello("c", 9));
  running[SshAllocationId("c")] = {3, 0};
  clock_.Advance(1);
  EXPECT_TRUE(dispatcher_->FenceAllocations("rented", running, clock_.WallMs(), "gone").empty());
}

TEST(DispatcherSshHelloTest, TheIdMustBeTheNodesAndTheFieldsBounded) {
  v1::Hello h = SshHello("a", 1);
  EXPECT_TRUE(Dispatcher::CheckHello(h).ok());
  h.set_worker_id("ssh/rented/b");
  EXPECT_NE(Dispatcher::CheckHello(h).message().find("is not ssh/rented/a"), std::string::npos);
  h = SshHello("a", 0);
  EXPECT_NE(Dispatcher::CheckHello(h).message().find("incarnation is not positive"),
            std::string::npos);
  h = SshHello("a/../x", 1);
  EXPECT_FALSE(Dispatcher::CheckHello(h).ok());
  h = SshHello("a", 1);
  h.mutable_slurm()->set_cluster("lab");
  EXPECT_NE(Dispatcher::CheckHello(h).message().find("both slurm and ssh"), std::string::npos);
}

TEST_F(DispatcherPoolsTest, DrainingWorkersGetNothing) {
  auto pilot = Connect(HelloOf("lab", 7, 0));
  dispatcher_->OnDraining("slurm/lab/7.0/0", true);
  Submit(8, 1, "lab");
  dispatcher_->ScheduleOnce();
  EXPECT_TRUE(pilot->Take().empty());
  dispatcher_->OnDraining("slurm/lab/7.0/0", false);
  dispatcher_->ScheduleOnce();
  EXPECT_EQ(pilot->Take().size(), 1u);
}

TEST(PlacementPoolsTest, RunDoesNotStartInAnAllocationThatEndsFirst) {
  PlanInput in;
  in.now_ms = 1000;
  in.queue = {{1, 1, 0, 8, "d", 0, false, 0, 0, "lab", /*expected_ms=*/5000}};
  NodeCapacity ending{"w1", 8, {0, 1, 2, 3, 4, 5, 6, 7}, 0, {"d"}, false, "", "lab", "lab/7.0", 4000};
  NodeCapacity lasting{"w2", 8, {0, 1, 2, 3, 4, 5, 6, 7}, 0, {"d"}, false, "", "lab", "lab/8.0", 9000};
  in.nodes = {ending};
  Plan plan = PlanAssignments(in);
  EXPECT_TRUE(plan.placements.empty());
  in.nodes = {ending, lasting};
  plan = PlanAssignments(in);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].nodes[0].worker_id, "w2");
  in.queue[0].expected_ms = 0;  // unknown: any allocation
  in.nodes = {ending};
  EXPECT_EQ(PlanAssignments(in).placements.size(), 1u);
}

}  // namespace
}  // namespace ablate
