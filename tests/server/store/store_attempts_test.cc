// Attempts: numbering and fencing tokens, stale writers refused without effect, retries
// against max_attempts, lost workers, and the sweep state following its runs.
#include "common/clock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::AddSweep;
using testing::OpenOrDie;
using testing::ResultOf;

class StoreAttemptsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.clock = &clock_;
    store_ = OpenOrDie(":memory:", options);
    ASSERT_NE(store_, nullptr);
    sweep_id_ = AddSweep(*store_, "attempts", {}, /*seeds=*/1);  // 2 runs, max_attempts 2
    RunFilter filter;
    filter.sweep_id = sweep_id_;
    runs_ = store_->ListRuns(filter).value();
  }
  SweepState SweepStateNow() { return store_->GetSweep(sweep_id_).value().state; }

  ManualClock clock_{/*wall_ms=*/1'000'000};
  std::unique_ptr<Store> store_;
  int64_t sweep_id_ = 0;
  std::vector<ablate::Run> runs_;
};

TEST_F(StoreAttemptsTest, AttemptLifecycleDrivesRunAndSweep) {
  const int64_t run_id = runs_[0].id;
  Attempt a = store_->CreateAttempt(run_id, "gpu-node-1").value();
  EXPECT_EQ(a.number, 1);
  // Unguessable (issue 24): random, never the attempt number.
  EXPECT_GT(a.fencing_token, 1024);
  EXPECT_NE(a.fencing_token, a.number);
  EXPECT_EQ(a.state, AttemptState::kAssigned);
  ablate::Run run = store_->GetRun(run_id).value();
  EXPECT_EQ(run.state, RunState::kAssigned);
  EXPECT_EQ(run.current_attempt_id, a.id);
  EXPECT_EQ(run.worker_id, "gpu-node-1");
  EXPECT_EQ(SweepStateNow(), SweepState::kQueued);
  EXPECT_EQ(store_->CreateAttempt(run_id, "w2").status().code(),
            absl::StatusCode::kFailedPrecondition);

  clock_.Advance(10);
  ASSERT_TRUE(store_->MarkAttemptRunning(a.id, a.fencing_token).ok());
  ASSERT_TRUE(store_->MarkAttemptRunning(a.id, a.fencing_token).ok());  // idempotent
  run = store_->GetRun(run_id).value();
  EXPECT_EQ(run.state, RunState::kRunning);
  EXPECT_EQ(run.started_ms, clock_.WallMs());
  EXPECT_EQ(SweepStateNow(), SweepState::kRunning);

  RunSummary summary;
  summary.final_val_loss = 3.27;
  summary.time_to_target_ms = 178000.0;
  summary.target_step = 1390;
  summary.reached_target = true;
  summary.steps = 1393;
  summary.mean_step_ms = 128.0;
  summary.train_time_ms = 179000.0;
  AttemptResult result = ResultOf(AttemptState::kSucceeded);
  result.summary = summary;
  result.stderr_tail = "done\n";
  clock_.Advance(10);
  run = store_->FinishAttempt(a.id, a.fencing_token, result).value();
  EXPECT_EQ(run.state, RunState::kSucceeded);
  EXPECT_EQ(run.finished_ms, clock_.WallMs());
  EXPECT_EQ(run.summary.final_val_loss, 3.27);
  EXPECT_EQ(run.summary.target_step, 1390);
  EXPECT_TRUE(run.summary.reached_target);
  EXPECT_EQ(run.summary.steps, 1393);
  Attempt stored = store_->GetAttempt(a.id).value();
  EXPECT_EQ(stored.state, AttemptState::kSucceeded);
  EXPECT_EQ(stored.stderr_tail, "done\n");
  EXPECT_EQ(stored.finished_ms, clock_.WallMs());
  EXPECT_EQ(SweepStateNow(), SweepState::kRunning);  // the other run is still queued

  Attempt b = store_->CreateAttempt(runs_[1].id, "w").value();
  ASSERT_TRUE(
      store_->FinishAttempt(b.id, b.fencing_token, ResultOf(AttemptState::kSucceeded)).ok());
  Sweep sweep = store_->GetSweep(sweep_id_).value();
  EXPECT_EQ(sweep.state, SweepState::kSucceeded);
  EXPECT_EQ(sweep.finished_ms, clock_.WallMs());
}

TEST_F(StoreAttemptsTest, StaleFencingTokenChangesNothing) {
  const int64_t run_id = runs_[0].id;
  Attempt first = store_->CreateAttempt(run_id, "w1").value();
  ASSERT_TRUE(store_->LoseAttempt(first.id).ok());
  Attempt second = store_->CreateAttempt(run_id, "w2").value();
  EXPECT_EQ(second.number, 2);
  EXPECT_NE(second.fencing_token, first.fencing_token);
  ASSERT_TRUE(store_->MarkAttemptRunning(second.id, second.fencing_token).ok());
  const ablate::Run before = store_->GetRun(run_id).value();
  const size_t events_before = store_->ListEvents(sweep_id_, 0, 0, 0).value().size();

  // The old worker comes back from a partition and reports.
  absl::StatusOr<ablate::Run> stale =
      store_->FinishAttempt(first.id, first.fencing_token, ResultOf(AttemptState::kFailed, "nan"));
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(stale.status().message().find("stale attempt"), std::string::npos);
  // The current attempt with a wrong token is refused as well.
  EXPECT_EQ(store_->FinishAttempt(second.id, first.fencing_token, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->MarkAttemptRunning(first.id, first.fencing_token).code(),
            absl::StatusCode::kFailedPrecondition);
  MetricPoint p;
  p.step = 1;
  p.train_loss = 10.0;
  EXPECT_EQ(store_->AppendMetrics(run_id, first.id, first.fencing_token, 0, {p}).status().code(),
            absl::StatusCode::kFailedPrecondition);

  const ablate::Run after = store_->GetRun(run_id).value();
  EXPECT_EQ(after.state, before.state);
  EXPECT_EQ(after.attempts_used, before.attempts_used);
  EXPECT_EQ(after.current_attempt_id, second.id);
  EXPECT_EQ(after.error, before.error);
  EXPECT_EQ(store_->GetAttempt(first.id).value().state, AttemptState::kLost);
  EXPECT_EQ(store_->ListEvents(sweep_id_, 0, 0, 0).value().size(), events_before);
  EXPECT_EQ(store_->GetMetrics(run_id, 0).value().total_points, 0);
}

TEST_F(StoreAttemptsTest, TrainerFailuresCountUntilMaxAttempts) {
  const int64_t run_id = runs_[0].id;
  Attempt a1 = store_->CreateAttempt(run_id, "w").value();
  ablate::Run run = store_
                        ->FinishAttempt(a1.id, a1.fencing_token,
                                        ResultOf(AttemptState::kFailed, "loss is NaN at step 12"))
                        .value();
  EXPECT_EQ(run.state, RunState::kQueued);
  EXPECT_EQ(run.attempts_used, 1);
  EXPECT_EQ(run.current_attempt_id, 0);
  EXPECT_EQ(run.error, "loss is NaN at step 12");
  EXPECT_EQ(store_->FinishAttempt(a1.id, a1.fencing_token, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);

  Attempt a2 = store_->CreateAttempt(run_id, "w").value();
  run = store_->FinishAttempt(a2.id, a2.fencing_token, ResultOf(AttemptState::kFailed, "exit 3"))
            .value();
  EXPECT_EQ(run.state, RunState::kFailed);  // max_attempts = 2
  EXPECT_EQ(run.attempts_used, 2);
  EXPECT_EQ(run.current_attempt_id, a2.id);
  EXPECT_GT(run.finished_ms, 0);
  EXPECT_EQ(store_->ListAttempts(run_id).value().size(), 2u);

  Attempt b = store_->CreateAttempt(runs_[1].id, "w").value();
  ASSERT_TRUE(store_->FinishAttempt(b.id, b.fencing_token, {}).ok());
  EXPECT_EQ(SweepStateNow(), SweepState::kFailed);
}

TEST_F(StoreAttemptsTest, LostWorkerRequeuesWithoutCounting) {
  const int64_t run_id = runs_[0].id;
  for (int i = 0; i < 4; ++i) {  // more losses than max_attempts: none of them count
    Attempt a = store_->CreateAttempt(run_id, "flaky").value();
    ASSERT_TRUE(store_->MarkAttemptRunning(a.id, a.fencing_token).ok());
    ablate::Run run = store_->LoseAttempt(a.id).value();
    EXPECT_EQ(run.state, RunState::kQueued);
    EXPECT_EQ(run.attempts_used, 0);
    EXPECT_EQ(run.worker_id, "");
    EXPECT_EQ(store_->LoseAttempt(a.id).status().code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(SweepStateNow(), SweepState::kRunning) << "a started sweep never goes back to queued";
  EXPECT_EQ(store_->LoseAttempt(999).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreAttemptsTest, BadFinishStatesAreInvalid) {
  Attempt a = store_->CreateAttempt(runs_[0].id, "w").value();
  EXPECT_EQ(
      store_->FinishAttempt(a.id, a.fencing_token, ResultOf(AttemptState::kLost)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->FinishAttempt(12345, 1, {}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->CreateAttempt(12345, "w").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ablate
