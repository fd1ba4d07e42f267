// How a worker stops kindly (issue 15), with the fake trainer as real child processes and real
// signals: SIGTERM releases every running attempt in one Release before the trainers are
// stopped, USR1 drains (an Assignment that still arrives is given back as "cancelled"), and an
// idle worker exits after idle_exit.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <thread>

#include "common/clock.h"
#include "tests/util/subprocess.h"
#include "tests/worker/fake_trainer.h"
#include "worker/stop_watch.h"
#include "worker/worker_core.h"

namespace ablate::worker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class RecordingSink : public MessageSink {
 public:
  uint64_t Generation() override { return 1; }
  bool Send(const v1::WorkerMessage& m, uint64_t) override {
    absl::MutexLock l(&mu_);
    sent_.push_back(m);
    return true;
  }
  std::vector<v1::WorkerMessage> Sent() {
    absl::MutexLock l(&mu_);
    return sent_;
  }
  int Count(v1::WorkerMessage::MsgCase c) {
    int n = 0;
    for (const auto& m : Sent()) n += m.msg_case() == c;
    return n;
  }
  bool WaitFor(v1::WorkerMessage::MsgCase c, int n, milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Count(c) >= n) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::WorkerMessage> sent_;
};

class WorkerReleaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The signals AwaitStop takes, blocked before the core starts its threads.
    sigemptyset(&signals_);
    for (int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&signals_, s);
    pthread_sigmask(SIG_BLOCK, &signals_, &old_mask_);
  }
  void TearDown() override {
    core_.reset();
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

  WorkerCore& Core() {
    WorkerCoreOptions o;
    o.work_dir = dir_.path() + "/work";
    o.data_dir = dir_.path() + "/data";
    o.trainer_path = ablate::worker::testing::WriteFakeTrainer(dir_.path());
    o.tick = milliseconds(20);
    o.shutdown_grace = seconds(2);
    core_ = std::move(WorkerCore::Create(o, &sink_)).value();
    return *core_;
  }

  // A fake trainer that runs until it is stopped.
  static v1::Assignment Hanging(int64_t attempt) {
    v1::Assignment a;
    a.set_run_id(attempt * 10);
    a.set_attempt_id(attempt);
    a.set_fencing_token(100 + attempt);
    a.set_config_json(R"({"untimed_steps": 0, "fake": {"steps": 1, "hang": true}})");
    a.set_dataset("ds");
    return a;
  }

  sigset_t signals_, old_mask_;
  ablate::testing::TempDir dir_;
  RecordingSink sink_;
  std::unique_ptr<WorkerCore> core_;
};

TEST_F(WorkerReleaseTest, SigtermReleasesEveryRunningAttemptBeforeTheTrainersStop) {
  WorkerCore& core = Core();
  core.HandleAssignment(Hanging(1));
  core.HandleAssignment(Hanging(2));
  ASSERT_TRUE(sink_.WaitFor(v1::WorkerMessage::kRunStarted, 2, seconds(10)));
  kill(getpid(), SIGTERM);
  EXPECT_EQ(AwaitStop(signals_, core, {}), "received SIGTERM");
  std::vector<v1::WorkerMessage> sent = sink_.Sent();
  auto release = std::find_if(sent.begin(), sent.end(),
                              [](const auto& m) { return m.has_release(); });
  ASSERT_NE(release, sent.end());
  EXPECT_EQ(release->release().reason(), "worker received SIGTERM");
  ASSERT_EQ(release->release().attempts_size(), 2);
  EXPECT_EQ(release->release().attempts(0).attempt_id(), 1);
  EXPECT_EQ(release->release().attempts(0).fencing_token(), 101);
  EXPECT_EQ(release->release().attempts(1).fencing_token(), 102);
  EXPECT_EQ(sink_.Count(v1::WorkerMessage::kRunFinished), 0) << "released before stopping";
  EXPECT_TRUE(core.draining());
  core.HandleAssignment(Hanging(3));  // too late: a stopping worker starts nothing
  core.Shutdown();
  EXPECT_EQ(sink_.Count(v1::WorkerMessage::kRunStarted), 2);
  EXPECT_EQ(sink_.Count(v1::WorkerMessage::kRelease), 1);
}

TEST_F(WorkerReleaseTest, NothingRunningReleasesNothing) {
  WorkerCore& core = Core();
  EXPECT_EQ(core.ReleaseAll("test"), 0u);
  EXPECT_EQ(sink_.Count(v1::WorkerMessage::kRelease), 0);
}

TEST_F(WorkerReleaseTest, Usr1DrainsAndAnIdleDrainedWorkerStops) {
  WorkerCore& core = Core();
  kill(getpid(), SIGUSR1);
  EXPECT_EQ(AwaitStop(signals_, core, {}), "drained and idle");
  EXPECT_TRUE(core.draining());
  // An assignment sent before the coordinator heard of the drain goes back, uncharged.
  core.HandleAssignment(Hanging(4));
  ASSERT_TRUE(sink_.WaitFor(v1::WorkerMessage::kRunFinished, 1, seconds(5)));
  for (const auto& m : sink_.Sent()) {
    if (!m.has_run_finished()) continue;
    EXPECT_EQ(m.run_finished().attempt_id(), 4);
    EXPECT_EQ(m.run_finished().status(), "cancelled");
    EXPECT_EQ(m.run_finished().error(), "worker is draining");
  }
  EXPECT_EQ(sink_.Count(v1::WorkerMessage::kRunStarted), 0);
}

TEST_F(WorkerReleaseTest, IdleExitOnlyAfterTheOutboxIsDelivered) {
  WorkerCore& core = Core();
  v1::Assignment a = Hanging(5);
  a.set_config_json(R"({"untimed_steps": 0, "fake": {"steps": 2}})");
  core.HandleAssignment(a);
  ASSERT_TRUE(sink_.WaitFor(v1::WorkerMessage::kRunFinished, 1, seconds(10)));
  std::thread ack([&] {
    std::this_thread::sleep_for(milliseconds(600));
    v1::Ack done;
    done.set_attempt_id(5);
    done.set_seq(0);  // as the coordinator acknowledges a RunFinished
    done.set_finished(true);
    core.HandleAck(done);
  });
  StopWatchOptions o;
  o.idle_exit = milliseconds(200);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(AwaitStop(signals_, core, o), "idle for 0 s (idle exit)");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(600))
      << "exited with the run's result not yet acknowledged";
  ack.join();
}

// Idleness is measured on the injected clock (common/clock.h), so a minute of idle_exit passes
// when the clock says so, not when the machine's does.
TEST_F(WorkerReleaseTest, IdleExitReadsTheInjectedClock) {
  WorkerCore& core = Core();
  ManualClock clock;
  std::thread advance([&] {
    std::this_thread::sleep_for(milliseconds(300));
    clock.Advance(60000);
  });
  StopWatchOptions o;
  o.idle_exit = std::chrono::minutes(1);
  o.poll = milliseconds(20);
  o.clock = &clock;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(AwaitStop(signals_, core, o), "idle for 60 s (idle exit)");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(300)) << "before the clock moved";
  advance.join();
}

}  // namespace
}  // namespace ablate::worker
