// Pure worker logic: batching, trainer event translation, exit classification, GPU discovery.
// (Dataset discovery: datasets_test.cc.)
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/util/subprocess.h"
#include "worker/batcher.h"
#include "worker/gpu_probe.h"
#include "worker/trainer_events.h"

namespace ablate::worker {
namespace {

v1::MetricPoint Step(int64_t step) {
  v1::MetricPoint p;
  p.set_step(step);
  p.set_train_loss(2.0);
  return p;
}

TEST(BatcherTest, CutsAtMaxPoints) {
  Batcher b({.max_points = 3, .max_age_ms = 500});
  EXPECT_FALSE(b.Add(Step(1), 0));
  EXPECT_FALSE(b.Add(Step(2), 0));
  auto batch = b.Add(Step(3), 0);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->size(), 3u);
  EXPECT_TRUE(b.empty());
}

TEST(BatcherTest, CutsWhenTheOldestPointIsOldEnough) {
  Batcher b({.max_points = 100, .max_age_ms = 500});
  EXPECT_FALSE(b.TakeIfDue(1000));  // nothing pending
  b.Add(Step(1), 1000);
  b.Add(Step(2), 1400);
  EXPECT_FALSE(b.TakeIfDue(1499));
  auto batch = b.TakeIfDue(1500);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->size(), 2u);
  b.Add(Step(3), 1600);  // the age restarts with the next batch
  EXPECT_FALSE(b.TakeIfDue(2000));
}

TEST(BatcherTest, MergesValIntoThePointOfTheSameStep) {
  Batcher b;
  b.Add(Step(4), 0);
  v1::MetricPoint val;
  val.set_step(4);
  val.set_val_loss(3.5);
  b.Add(val, 0);
  std::vector<v1::MetricPoint> all = b.TakeAll();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].train_loss(), 2.0);
  EXPECT_EQ(all[0].val_loss(), 3.5);
}

TEST(TrainerEventsTest, StepAndValPoints) {
  auto step = ParseTrainerEvent(
      R"({"event":"step","step":7,"train_loss":4.5,"lr":0.5,"momentum":0.9,"step_ms":12.5,)"
      R"("train_ms":40.0,"tokens":7168})");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->kind, EventKind::kStep);
  ASSERT_TRUE(PointFromEvent(*step));
  v1::MetricPoint p = *PointFromEvent(*step);
  EXPECT_EQ(p.step(), 7);
  EXPECT_EQ(p.train_loss(), 4.5);
  EXPECT_EQ(p.lr(), 0.5);
  EXPECT_EQ(p.step_ms(), 12.5);
  EXPECT_EQ(p.train_time_ms(), 40.0);
  EXPECT_EQ(p.tokens(), 7168);
  EXPECT_FALSE(p.has_val_loss());
  auto val = ParseTrainerEvent(R"({"event":"val","step":8,"val_loss":3.25,"train_ms":50})");
  ASSERT_TRUE(val && PointFromEvent(*val));
  v1::MetricPoint v = *PointFromEvent(*val);
  EXPECT_EQ(v.step(), 8);
  EXPECT_EQ(v.val_loss(), 3.25);
  EXPECT_FALSE(v.has_train_loss());
  EXPECT_FALSE(v.has_train_time_ms());
}

// A script's output is untrusted: a step that is missing, negative, fractional or beyond int64
// makes no point (the fuzz target script_output found a val event with step -2 becoming one).
TEST(TrainerEventsTest, AnEventWithoutAWholeNonNegativeStepIsNoPoint) {
  for (const char* line :
       {R"({"event":"val","step":-2,"val_loss":5.01})", R"({"event":"step","train_loss":4.5})",
        R"({"event":"step","step":2.5,"train_loss":4.5})",
        R"({"event":"step","step":1e30,"train_loss":4.5})",
        R"({"event":"step","step":18446744073709551615,"train_loss":4.5})",
        R"({"event":"val","step":"7","val_loss":3.0})"}) {
    auto event = ParseTrainerEvent(line);
    ASSERT_TRUE(event) << line;
    EXPECT_FALSE(PointFromEvent(*event)) << line;
  }
  auto whole = ParseTrainerEvent(R"({"event":"val","step":20.0,"val_loss":3.0})");
  ASSERT_TRUE(whole && PointFromEvent(*whole));
  EXPECT_EQ(PointFromEvent(*whole)->step(), 20);
}

TEST(TrainerEventsTest, IgnoresNonEvents) {
  EXPECT_FALSE(ParseTrainerEvent("hello"));
  EXPECT_FALSE(ParseTrainerEvent("[1,2]"));
  EXPECT_FALSE(ParseTrainerEvent(R"({"step":1})"));
  EXPECT_EQ(ParseTrainerEvent(R"({"event":"weird"})")->kind, EventKind::kOther);
}

TEST(TrainerEventsTest, SummaryFromEnd) {
  auto end = ParseTrainerEvent(
      R"({"event":"end","status":"ok","final_val_loss":3.1,"time_to_target_ms":90.0,)"
      R"("target_step":9,"steps":12,"train_ms":100.0})");
  v1::RunSummary s = SummaryFromEnd(end->body, 2);
  EXPECT_EQ(s.final_val_loss(), 3.1);
  EXPECT_EQ(s.time_to_target_ms(), 90.0);
  EXPECT_EQ(s.target_step(), 9);
  EXPECT_TRUE(s.reached_target());
  EXPECT_EQ(s.steps(), 12);
  EXPECT_EQ(s.train_time_ms(), 100.0);
  EXPECT_DOUBLE_EQ(s.mean_step_ms(), 10.0);  // 100 ms over 12 - 2 timed steps
}

TEST(TrainerEventsTest, SummaryWithNullsLeavesFieldsUnset) {
  auto end = ParseTrainerEvent(
      R"({"event":"end","status":"failed","final_val_loss":null,"time_to_target_ms":null,)"
      R"("target_step":null,"steps":1,"train_ms":0.0})");
  v1::RunSummary s = SummaryFromEnd(end->body, 10);
  EXPECT_FALSE(s.has_final_val_loss());
  EXPECT_FALSE(s.has_time_to_target_ms());
  EXPECT_FALSE(s.has_target_step());
  EXPECT_FALSE(s.reached_target());
  EXPECT_FALSE(s.has_mean_step_ms());  // no timed steps
}

ExitFacts Facts(int code, bool signaled, bool cancelled, std::optional<std::string> end,
                std::string error = "") {
  ExitFacts f;
  f.exit_code = code;
  f.signaled = signaled;
  f.cancel_requested = cancelled;
  f.end_status = std::move(end);
  f.last_error = std::move(error);
  return f;
}

TEST(TrainerEventsTest, ClassifyExit) {
  EXPECT_EQ(ClassifyExit(Facts(0, false, false, "ok")).status, "ok");
  EXPECT_EQ(ClassifyExit(Facts(0, false, false, "cancelled")).status, "cancelled");
  EXPECT_EQ(ClassifyExit(Facts(143, true, true, std::nullopt)).status, "cancelled");
  EXPECT_EQ(ClassifyExit(Facts(0, false, true, "ok")).status, "ok");  // finished before the cancel
  ExitVerdict nan =
      ClassifyExit(Facts(3, false, false, "failed", "train loss is not finite at step 4"));
  EXPECT_EQ(nan.status, "nan");
  EXPECT_EQ(nan.error, "train loss is not finite at step 4");
  ExitVerdict failed = ClassifyExit(Facts(1, false, false, std::nullopt, "boom"));
  EXPECT_EQ(failed.status, "failed");
  EXPECT_EQ(failed.error, "boom (exit code 1)");
  EXPECT_EQ(ClassifyExit(Facts(137, true, false, std::nullopt)).error,
            "killed by signal SIGKILL");
  EXPECT_EQ(ClassifyExit(Facts(0, false, false, std::nullopt)).status, "failed");  // no end
}

TEST(GpuProbeTest, ParsesNvidiaSmiCsv) {
  auto gpus = ParseNvidiaSmi("0, NVIDIA H100 80GB HBM3, 81559\n1, NVIDIA H100 80GB HBM3, 81559\n"
                             "garbage\n");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].index(), 1);
  EXPECT_EQ(gpus[1].model(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[1].memory_mb(), 81559);
}

TEST(GpuProbeTest, SelectsBySpec) {
  auto found = ParseNvidiaSmi("0, A, 1\n1, B, 2\n2, C, 3\n");
  EXPECT_EQ(SelectGpus(found, "all")->size(), 3u);
  EXPECT_TRUE(SelectGpus(found, "none")->empty());
  auto some = SelectGpus(found, "0,2");
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 2u);
  EXPECT_EQ((*some)[1].model(), "C");
  EXPECT_EQ(SelectGpus(found, "5").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SelectGpus(found, "x").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ablate::worker
