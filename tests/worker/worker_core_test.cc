// WorkerCore with a fake connection and the fake trainer: what reaches the coordinator, in what
// order, and what is resent after reconnects, acknowledgements, cancels and restarts.
#include "worker/worker_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/util/subprocess.h"
#include "tests/worker/fake_trainer.h"
#include "trainer/collectives/nccl_id.h"
#include "worker/nccl_handoff.h"

namespace ablate::worker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A connection that records what is written; generation 0 means disconnected.
class FakeSink : public MessageSink {
 public:
  uint64_t Generation() override {
    absl::MutexLock l(&mu_);
    return generation_;
  }
  bool Send(const v1::WorkerMessage& m, uint64_t generation) override {
    absl::MutexLock l(&mu_);
    if (generation == 0 || generation != generation_) return false;
    sent_.push_back(m);
    return true;
  }
  void Connect(uint64_t generation) {
    absl::MutexLock l(&mu_);
    generation_ = generation;
    sent_.clear();
  }
  std::vector<v1::WorkerMessage> Sent() {
    absl::MutexLock l(&mu_);
    return sent_;
  }
  // Waits until a RunFinished was sent on the current connection.
  bool WaitFinished(milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      for (const auto& m : Sent()) {
        if (m.has_run_finished()) return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

 private:
  absl::Mutex mu_;
  uint64_t generation_ = 1;
  std::vector<v1::WorkerMessage> sent_;
};

// Metric batch seqs and steps in send order; RunFinished shows as seq -1.
struct Summary {
  std::vector<int64_t> seqs;
  std::vector<int64_t> train_steps;
  int started = 0;
  std::string status;
};

Summary Summarize(const std::vector<v1::WorkerMessage>& sent) {
  Summary s;
  for (const auto& m : sent) {
    if (m.has_run_started()) ++s.started;
    if (m.has_metrics()) {
      s.seqs.push_back(m.metrics().seq());
      for (const auto& p : m.metrics().points()) {
        if (p.has_train_loss()) s.train_steps.push_back(p.step());
      }
    }
    if (m.has_run_finished()) s.seqs.push_back(-1), s.status = m.run_finished().status();
  }
  return s;
}

class WorkerCoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<WorkerCore> MakeCore(const std::string& checkpoint_dir = "",
                                       milliseconds resend_after = seconds(2)) {
    WorkerCoreOptions o;
    o.resend_after = resend_after;
    o.checkpoint_dir = checkpoint_dir;
    o.work_dir = dir_.path() + "/work";
    o.data_dir = dir_.path() + "/data";
    o.trainer_path = ablate::worker::testing::WriteFakeTrainer(dir_.path());
    o.batcher = {.max_points = 3, .max_age_ms = 50};
    o.tick = milliseconds(20);
    o.shutdown_grace = seconds(2);
    auto core = WorkerCore::Create(o, &sink_);
    EXPECT_TRUE(core.ok()) << core.status();
    return std::move(core).value();
  }
  v1::Assignment Assign(int64_t attempt, const nlohmann::json& fake) {
    v1::Assignment a;
    a.set_run_id(10);
    a.set_attempt_id(attempt);
    a.set_fencing_token(100 + attempt);
    a.set_config_json(nlohmann::json({{"untimed_steps", 0}, {"fake", fake}}).dump());
    a.set_dataset("ds");
    return a;
  }
  static std::vector<int64_t> Range(int64_t from, int64_t to) {
    std::vector<int64_t> v;
    for (int64_t i = from; i <= to; ++i) v.push_back(i);
    return v;
  }
  ablate::testing::TempDir dir_;
  FakeSink sink_;
};

TEST_F(WorkerCoreTest, StreamsStartedBatchesInOrderThenFinished) {
  auto core = MakeCore();
  core->HandleAssignment(Assign(1, {{"steps", 10}, {"val_every", 0}}));
  ASSERT_TRUE(sink_.WaitFinished(seconds(20)));
  Summary s = Summarize(sink_.Sent());
  EXPECT_EQ(s.started, 1);
  EXPECT_EQ(s.train_steps, Range(1, 10));  // every step exactly once
  ASSERT_GE(s.seqs.size(), 2u);
  EXPECT_EQ(s.seqs.back(), -1);
  s.seqs.pop_back();
  EXPECT_EQ(s.seqs, Range(1, int64_t(s.seqs.size())));
  EXPECT_EQ(s.status, "ok");
  for (const auto& m : sink_.Sent()) {
    if (m.has_metrics()) {
      EXPECT_EQ(m.metrics().fencing_token(), 101);
    }
  }
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/work/runs/10-a1/config.json"));
}

TEST_F(WorkerCoreTest, ResendsUnacknowledgedAfterReconnectWithTheSameSeqs) {
  auto core = MakeCore();
  core->HandleAssignment(Assign(2, {{"steps", 7}, {"val_every", 0}}));
  ASSERT_TRUE(sink_.WaitFinished(seconds(20)));
  std::vector<v1::WorkerMessage> first = sink_.Sent();
  int64_t batches = int64_t(Summarize(first).seqs.size()) - 1;
  core->HandleAck([&] { v1::Ack a; a.set_attempt_id(2); a.set_seq(1); return a; }());
  sink_.Connect(2);
  core->SendPending();
  Summary again = Summarize(sink_.Sent());
  std::vector<int64_t> expected = Range(2, batches);
  expected.push_back(-1);
  EXPECT_EQ(again.seqs, expected);
  EXPECT_EQ(sink_.Sent()[0].SerializeAsString(), first[2].SerializeAsString());  // same bytes
  // Acknowledging the RunFinished empties the outbox: nothing after the next reconnect.
  core->HandleAck([&] { v1::Ack a; a.set_attempt_id(2); a.set_seq(INT64_MAX); return a; }());
  sink_.Connect(3);
  core->SendPending();
  EXPECT_TRUE(sink_.Sent().empty());
}

// Issue 24, the ack contract: the coordinator acknowledges only a committed prefix. What stays
// unacknowledged (a batch that failed to commit there) is sent again on the same stream, without
// a reconnect, from the first unacknowledged seq, the RunFinished after it; once everything is
// acknowledged nothing more is sent.
TEST_F(WorkerCoreTest, UnacknowledgedMessagesAreSentAgainOnTheSameStream) {
  auto core = MakeCore("", milliseconds(300));
  core->HandleAssignment(Assign(8, {{"steps", 7}, {"val_every", 0}}));
  ASSERT_TRUE(sink_.WaitFinished(seconds(20)));
  core->HandleAck([&] { v1::Ack a; a.set_attempt_id(8); a.set_seq(1); return a; }());
  // The first RunFinished ends the first round; it names the attempt's last batch.
  std::vector<v1::WorkerMessage> sent = sink_.Sent();
  size_t first_round = 0;
  while (!sent[first_round].has_run_finished()) ++first_round;
  const int64_t batches = sent[first_round].run_finished().last_batch_seq();
  ASSERT_GE(batches, 2);
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (Summarize(sink_.Sent()).seqs.size() < size_t(2 * batches + 1) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  sent = sink_.Sent();
  std::vector<v1::WorkerMessage> again(sent.begin() + first_round + 1, sent.end());
  std::vector<int64_t> expected = Range(2, batches);
  expected.push_back(-1);
  std::vector<int64_t> resent = Summarize(again).seqs;
  ASSERT_GE(resent.size(), expected.size());
  resent.resize(expected.size());
  EXPECT_EQ(resent, expected) << "from the first unacknowledged seq, on the same connection";
  // Everything acknowledged: silence.
  core->HandleAck([&] { v1::Ack a; a.set_attempt_id(8); a.set_finished(true); return a; }());
  std::this_thread::sleep_for(milliseconds(100));
  const size_t settled = sink_.Sent().size();
  std::this_thread::sleep_for(milliseconds(1500));
  EXPECT_EQ(sink_.Sent().size(), settled);
}

TEST_F(WorkerCoreTest, WhileDisconnectedEverythingWaitsInTheOutbox) {
  auto core = MakeCore();
  sink_.Connect(0);
  core->HandleAssignment(Assign(3, {{"steps", 6}, {"val_every", 0}}));
  auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (core->running() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  std::this_thread::sleep_for(milliseconds(100));
  sink_.Connect(4);
  core->SendPending();
  Summary s = Summarize(sink_.Sent());
  EXPECT_EQ(s.train_steps, Range(1, 6));
  EXPECT_EQ(s.seqs.back(), -1);
  EXPECT_EQ(s.started, 0);  // RunStarted is not kept: Hello.running covers it
}

TEST_F(WorkerCoreTest, OutboxSurvivesAWorkerRestart) {
  {
    auto core = MakeCore();
    core->HandleAssignment(Assign(4, {{"steps", 4}, {"val_every", 0}}));
    ASSERT_TRUE(sink_.WaitFinished(seconds(20)));
  }
  sink_.Connect(5);
  auto core = MakeCore();
  core->SendPending();
  Summary s = Summarize(sink_.Sent());
  EXPECT_EQ(s.train_steps, Range(1, 4));
  EXPECT_EQ(s.seqs.front(), 1);
  EXPECT_EQ(s.status, "ok");
}

TEST_F(WorkerCoreTest, CancelStopsTheChildAndReportsCancelled) {
  auto core = MakeCore();
  core->HandleAssignment(Assign(5, {{"steps", 1}, {"hang", true}}));
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (Summarize(sink_.Sent()).started == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(core->Held().size(), 1u);
  EXPECT_EQ(core->Held()[0].fencing_token(), 105);
  v1::Cancel cancel;
  cancel.set_attempt_id(5);
  cancel.set_grace_ms(2000);
  core->HandleCancel(cancel);
  ASSERT_TRUE(sink_.WaitFinished(seconds(5)));
  EXPECT_EQ(Summarize(sink_.Sent()).status, "cancelled");
  EXPECT_TRUE(core->Held().empty());
  // A second Cancel for the finished attempt means its writes are refused: drop its outbox.
  core->HandleCancel(cancel);
  sink_.Connect(6);
  core->SendPending();
  EXPECT_TRUE(sink_.Sent().empty());
}

TEST_F(WorkerCoreTest, StaleAttemptsAreStoppedAndForgotten) {
  auto core = MakeCore();
  core->HandleAssignment(Assign(6, {{"steps", 1}, {"hang", true}}));
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (Summarize(sink_.Sent()).started == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  core->HandleStale({6});
  deadline = std::chrono::steady_clock::now() + seconds(5);
  while (core->running() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(core->running(), 0u);
  std::this_thread::sleep_for(milliseconds(100));
  sink_.Connect(7);
  core->SendPending();
  EXPECT_TRUE(sink_.Sent().empty());
}

TEST_F(WorkerCoreTest, ShutdownStopsChildrenWithinTheGrace) {
  auto core = MakeCore();
  core->HandleAssignment(Assign(7, {{"steps", 1}, {"hang", true}, {"ignore_term", true}}));
  std::this_thread::sleep_for(milliseconds(300));
  auto t0 = std::chrono::steady_clock::now();
  core->Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(4));
  EXPECT_EQ(core->running(), 0u);
  EXPECT_EQ(Summarize(sink_.Sent()).status, "cancelled");
  core->HandleAssignment(Assign(8, {{"steps", 1}}));  // no longer accepted
  EXPECT_EQ(core->running(), 0u);
}

TEST(NcclHandoff, TopologyArgs) {
  v1::Assignment a;
  EXPECT_TRUE(TopologyArgs(a, "/r/nccl_id").empty());  // CPU
  a.add_gpus(5);
  EXPECT_TRUE(TopologyArgs(a, "/r/nccl_id").empty());  // one GPU: the trainer's default 0
  a.add_gpus(7);
  EXPECT_EQ(TopologyArgs(a, "/r/nccl_id"), (std::vector<std::string>{"--gpus", "0-1"}));
  a.set_num_nodes(3);
  a.set_node_rank(2);
  EXPECT_EQ(TopologyArgs(a, "/r/nccl_id"),
            (std::vector<std::string>{"--gpus", "0-1", "--nnodes", "3", "--node-rank", "2",
                                      "--nccl-id-file", "/r/nccl_id"}));
}

std::string SomeNcclId(char seed) {
  std::string id(kNcclIdBytes, '\0');
  for (size_t i = 0; i < id.size(); ++i) id[i] = char(seed + 3 * i);
  return id;
}

v1::Assignment MultiNode(v1::Assignment a, int rank) {
  a.add_gpus(0);
  a.add_gpus(1);
  a.set_num_nodes(2);
  a.set_node_rank(rank);
  return a;
}

// The fake trainer's argv (from env.json in its run folder), once it has started.
std::vector<std::string> TrainerArgv(const std::string& run_dir) {
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto env = nlohmann::json::parse(ablate::testing::ReadFile(run_dir + "/env.json"), nullptr,
                                     false);  // absent or half-written: try again
    if (!env.is_discarded() && env.contains("argv")) return env["argv"];
    std::this_thread::sleep_for(milliseconds(10));
  }
  return {};
}

bool Contains(const std::vector<std::string>& argv, const std::vector<std::string>& run) {
  return std::search(argv.begin(), argv.end(), run.begin(), run.end()) != argv.end();
}

// Node 0: the trainer is told to write the id; once it has, the worker sends it, once.
TEST_F(WorkerCoreTest, MultiNodeRankZeroSendsTheIdItsTrainerWrote) {
  auto core = MakeCore();
  core->HandleAssignment(MultiNode(Assign(11, {{"steps", 1}, {"hang", true}}), 0));
  std::string run_dir = dir_.path() + "/work/runs/10-a11";
  std::vector<std::string> argv = TrainerArgv(run_dir);
  std::vector<v1::HeldAttempt> held = core->Held();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(std::vector<int32_t>(held[0].gpus().begin(), held[0].gpus().end()),
            (std::vector<int32_t>{0, 1}))
      << "the coordinator keeps the GPUs taken after a reconnect";
  EXPECT_EQ(held[0].node_rank(), 0);
  EXPECT_EQ(held[0].num_nodes(), 2);
  EXPECT_TRUE(Contains(argv, {"--gpus", "0-1", "--nnodes", "2", "--node-rank", "0",
                              "--nccl-id-file", run_dir + "/nccl_id"}))
      << nlohmann::json(argv).dump();
  std::this_thread::sleep_for(milliseconds(100));
  for (const auto& m : sink_.Sent()) EXPECT_FALSE(m.has_nccl_id()) << "sent before it exists";
  ASSERT_TRUE(WriteNcclIdFile(run_dir + "/nccl_id", SomeNcclId(1)).ok());  // as ablate-train does
  std::vector<v1::NcclId> sent;
  auto deadline = std::chrono::steady_clock::now() + seconds(5);
  while (sent.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
    for (const auto& m : sink_.Sent()) {
      if (m.has_nccl_id()) sent.push_back(m.nccl_id());
    }
  }
  std::this_thread::sleep_for(milliseconds(100));  // a few more ticks: still once
  sent.clear();
  for (const auto& m : sink_.Sent()) {
    if (m.has_nccl_id()) sent.push_back(m.nccl_id());
  }
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].attempt_id(), 11);
  EXPECT_EQ(sent[0].unique_id(), SomeNcclId(1));
  core->Shutdown();
}

// Other nodes: the relayed id lands where the trainer waits for it, also when it arrives before
// the Assignment.
TEST_F(WorkerCoreTest, MultiNodeOtherRanksWriteTheRelayedIdForTheirTrainer) {
  auto core = MakeCore();
  v1::NcclId early;
  early.set_attempt_id(12);
  early.set_unique_id(SomeNcclId(2));
  core->HandleNcclId(early);
  core->HandleAssignment(MultiNode(Assign(12, {{"steps", 1}, {"hang", true}}), 1));
  std::string dir12 = dir_.path() + "/work/runs/10-a12";
  EXPECT_TRUE(Contains(TrainerArgv(dir12), {"--node-rank", "1", "--nccl-id-file",
                                            dir12 + "/nccl_id"}));
  Result<std::string> id12 = ReadNcclIdFile(dir12 + "/nccl_id", seconds(5));
  ASSERT_TRUE(id12.ok()) << id12.error().message;
  EXPECT_EQ(*id12, SomeNcclId(2));

  core->HandleAssignment(MultiNode(Assign(13, {{"steps", 1}, {"hang", true}}), 1));
  std::string dir13 = dir_.path() + "/work/runs/10-a13";
  ASSERT_FALSE(TrainerArgv(dir13).empty());
  // A coordinator that restarted knows this node again from its Hello (the store names node 0's
  // worker only).
  std::vector<v1::HeldAttempt> held = core->Held();
  ASSERT_EQ(held.size(), 2u);
  for (const v1::HeldAttempt& h : held) {
    EXPECT_EQ(h.node_rank(), 1) << "attempt " << h.attempt_id();
    EXPECT_EQ(h.num_nodes(), 2) << "attempt " << h.attempt_id();
  }
  EXPECT_FALSE(std::filesystem::exists(dir13 + "/nccl_id"));
  v1::NcclId later;
  later.set_attempt_id(13);
  later.set_unique_id(SomeNcclId(3));
  core->HandleNcclId(later);
  Result<std::string> id13 = ReadNcclIdFile(dir13 + "/nccl_id", seconds(5));
  ASSERT_TRUE(id13.ok()) << id13.error().message;
  EXPECT_EQ(*id13, SomeNcclId(3));
  core->Shutdown();
}

// Lines of the trainer's events.jsonl in `run_dir` whose event is `kind`.
int EventsOfKind(const std::string& run_dir, const std::string& kind) {
  std::istringstream lines(ablate::testing::ReadFile(run_dir + "/events.jsonl"));
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.value("event", "") == kind) ++n;
  }
  return n;
}

// Every node's trainer emits the same points; only node 0's worker sends them (the coordinator
// deduplicates batches by attempt and seq, so another node's batch k would collide with node 0's).
TEST_F(WorkerCoreTest, MultiNodeOtherRanksSendNoMetricPointsButTheirResult) {
  auto core = MakeCore();
  core->HandleAssignment(MultiNode(Assign(14, {{"steps", 6}, {"val_every", 2}}), 1));
  ASSERT_TRUE(sink_.WaitFinished(seconds(20)));
  int metrics = 0, finished = 0;
  for (const auto& m : sink_.Sent()) {
    metrics += m.has_metrics();
    if (!m.has_run_finished()) continue;
    ++finished;
    EXPECT_EQ(m.run_finished().attempt_id(), 14);
    EXPECT_EQ(m.run_finished().status(), "ok");
    EXPECT_EQ(m.run_finished().summary().steps(), 6);
  }
  EXPECT_EQ(metrics, 0);
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(Summarize(sink_.Sent()).started, 1);
  std::string run_dir = dir_.path() + "/work/runs/10-a14";
  EXPECT_EQ(EventsOfKind(run_dir, "step"), 6) << "the points stay in the run folder";
  EXPECT_EQ(EventsOfKind(run_dir, "val"), 4);
  // Nothing but the RunFinished waits in the outbox either.
  sink_.Connect(8);
  core->SendPending();
  EXPECT_EQ(Summarize(sink_.Sent()).seqs, std::vector<int64_t>{-1});
  core->Shutdown();
}

TEST_F(WorkerCoreTest, MultiNodeRankZeroSendsTheMetricPoints) {
  auto core = MakeCore();
  core->HandleAssignment(MultiNode(Assign(15, {{"steps", 6}, {"val_every", 0}}), 0));
  ASSERT_TRUE(sink_.WaitFinished(seconds(20)));
  Summary s = Summarize(sink_.Sent());
  EXPECT_EQ(s.started, 1);
  EXPECT_EQ(s.train_steps, Range(1, 6));
  ASSERT_GE(s.seqs.size(), 2u);
  EXPECT_EQ(s.seqs.front(), 1);
  EXPECT_EQ(s.seqs.back(), -1);
  EXPECT_EQ(s.status, "ok");
  core->Shutdown();
}

// A sweep with checkpoint_every: the trainer writes into ROOT/run-<id>, resumes from the newest
// checkpoint within the stored curve (Assignment.resume_max_step), and every batch says so.
TEST_F(WorkerCoreTest, ResumesFromTheNewestCheckpointTheStoredCurveReaches) {
  const std::string root = dir_.path() + "/shared", run = root + "/run-10";
  std::filesystem::create_directories(run);
  for (const char* name : {"ckpt-00000003.safetensors", "ckpt-00000002.safetensors",
                           "ckpt-00000009.safetensors", "ckpt-00000004.safetensors.tmp.77"}) {
    ablate::testing::WriteFile(run + "/" + name, "x");
  }
  auto core = MakeCore(root);
  v1::Assignment a = Assign(21, {{"steps", 8}, {"val_every", 0}});
  a.set_checkpoint_every_ms(90000);
  a.set_resume_max_step(5);  // the coordinator holds the points up to step 5
  core->HandleAssignment(a);
  ASSERT_TRUE(sink_.WaitFinished(seconds(20)));
  std::vector<std::string> argv = TrainerArgv(dir_.path() + "/work/runs/10-a21");
  EXPECT_TRUE(Contains(argv, {"--checkpoint-dir", run, "--checkpoint-every", "90s", "--resume", run}))
      << nlohmann::json(argv).dump();
  EXPECT_TRUE(std::filesystem::exists(run + "/ckpt-00000003.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(run + "/ckpt-00000009.safetensors")) << "ahead of the curve";
  EXPECT_FALSE(std::filesystem::exists(run + "/ckpt-00000004.safetensors.tmp.77"));
  Summary s = Summarize(sink_.Sent());
  EXPECT_EQ(s.train_steps, Range(4, 8));
  EXPECT_EQ(s.status, "ok");
  int batches = 0;
  for (const auto& m : sink_.Sent()) {
    if (!m.has_metrics()) continue;
    ++batches;
    EXPECT_TRUE(m.metrics().has_resumed_from_step());
    EXPECT_EQ(m.metrics().resumed_from_step(), 3);
  }
  EXPECT_GT(batches, 0);
}

TEST_F(WorkerCoreTest, AFreshAttemptWritesCheckpointsWithoutResuming) {
  const std::string root = dir_.path() + "/shared";
  auto core = MakeCore(root);
  v1::Assignment a = Assign(22, {{"steps", 3}, {"val_every", 0}});
  a.set_checkpoint_every_ms(1500);
  core->HandleAssignment(a);
  ASSERT_TRUE(sink_.WaitFinished(seconds(20)));
  std::vector<std::string> argv = TrainerArgv(dir_.path() + "/work/runs/10-a22");
  EXPECT_TRUE(Contains(argv, {"--checkpoint-dir", root + "/run-10", "--checkpoint-every", "1.500s"}));
  EXPECT_FALSE(Contains(argv, {"--resume"}));
  EXPECT_TRUE(std::filesystem::is_directory(root + "/run-10"));
  EXPECT_EQ(Summarize(sink_.Sent()).train_steps, Range(1, 3));
  for (const auto& m : sink_.Sent()) EXPECT_FALSE(m.has_metrics() && m.metrics().has_resumed_from_step());
}

TEST_F(WorkerCoreTest, WithoutACheckpointDirTheSweepsRequestIsIgnoredSayingSo) {
  auto core = MakeCore();
  v1::Assignment a = Assign(23, {{"steps", 2}, {"val_every", 0}});
  a.set_checkpoint_every_ms(600000);
  a.set_resume_max_step(1);
  ::testing::internal::CaptureStderr();
  core->HandleAssignment(a);
  bool finished = sink_.WaitFinished(seconds(20));
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(finished);
  EXPECT_NE(log.find("the sweep asks for checkpoints every 600s, but this worker has no "
                     "--checkpoint-dir: running without them"),
            std::string::npos)
      << log;
  std::vector<std::string> argv = TrainerArgv(dir_.path() + "/work/runs/10-a23");
  EXPECT_FALSE(Contains(argv, {"--checkpoint-dir"}));
  EXPECT_FALSE(Contains(argv, {"--resume"}));
}

}  // namespace
}  // namespace ablate::worker
