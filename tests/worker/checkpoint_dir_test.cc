// A run's checkpoint folder on the worker (worker/checkpoint_dir.h): names, the trainer's
// period argument, what PlanCheckpoints removes and when it resumes; the start event's
// resumed_from.
#include "worker/checkpoint_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/util/subprocess.h"
#include "worker/trainer_events.h"

namespace ablate::worker {
namespace {

namespace fs = std::filesystem;

TEST(CheckpointDir, NamesAndPeriods) {
  EXPECT_EQ(RunCheckpointDir("/shared/ckpt", 42), "/shared/ckpt/run-42");
  EXPECT_EQ(CheckpointStep("ckpt-00000120.safetensors"), 120);
  EXPECT_EQ(CheckpointStep("ckpt-00000120.safetensors.tmp.991"), std::nullopt);
  EXPECT_EQ(CheckpointStep("ckpt-.safetensors"), std::nullopt);
  EXPECT_EQ(CheckpointStep("ckpt-12a.safetensors"), std::nullopt);
  EXPECT_EQ(CheckpointStep("weights.safetensors"), std::nullopt);
  EXPECT_EQ(CheckpointEveryArg(600000), "600s");
  EXPECT_EQ(CheckpointEveryArg(1500), "1.500s");
}

TEST(CheckpointDir, KeepsWhatTheCurveReachesAndResumesFromIt) {
  ablate::testing::TempDir tmp;
  const std::string dir = tmp.path() + "/run-7";
  fs::create_directories(dir);
  for (const char* name : {"ckpt-00000010.safetensors", "ckpt-00000020.safetensors",
                           "ckpt-00000030.safetensors", "ckpt-00000030.safetensors.tmp.5",
                           "notes.txt"}) {
    ablate::testing::WriteFile(dir + "/" + name, "x");
  }
  absl::StatusOr<CheckpointPlan> plan = PlanCheckpoints(dir, 60000, 25);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->newest, 20);
  EXPECT_EQ(plan->trainer_args, (std::vector<std::string>{"--checkpoint-dir", dir,
                                                          "--checkpoint-every", "60s",
                                                          "--resume", dir}));
  EXPECT_EQ(plan->removed.size(), 2u);
  EXPECT_TRUE(fs::exists(dir + "/ckpt-00000010.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/ckpt-00000020.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/ckpt-00000030.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/ckpt-00000030.safetensors.tmp.5"));
  EXPECT_TRUE(fs::exists(dir + "/notes.txt")) << "not a checkpoint: left alone";
}

TEST(CheckpointDir, NothingWithinTheCurveStartsFresh) {
  ablate::testing::TempDir tmp;
  const std::string dir = tmp.path() + "/a/run-1";  // created, parents too
  absl::StatusOr<CheckpointPlan> plan = PlanCheckpoints(dir, 1000, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_FALSE(plan->newest.has_value());
  EXPECT_EQ(plan->trainer_args,
            (std::vector<std::string>{"--checkpoint-dir", dir, "--checkpoint-every", "1s"}));
  ablate::testing::WriteFile(dir + "/ckpt-00000004.safetensors", "x");
  plan = PlanCheckpoints(dir, 1000, 0);  // the coordinator holds no point of the run
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->newest.has_value());
  EXPECT_FALSE(fs::exists(dir + "/ckpt-00000004.safetensors"));
}

TEST(CheckpointDir, AFolderThatCannotBeMadeIsAnError) {
  ablate::testing::TempDir tmp;
  ablate::testing::WriteFile(tmp.path() + "/file", "x");
  absl::StatusOr<CheckpointPlan> plan = PlanCheckpoints(tmp.path() + "/file/run-1", 1000, 5);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(plan.status().message().find("cannot create checkpoint folder"), std::string::npos);
}

TEST(TrainerEventsTest, StartEventResumedFrom) {
  using J = nlohmann::json;
  EXPECT_EQ(ResumedFromStart(J{{"event", "start"}, {"resumed_from", nullptr}}), std::nullopt);
  EXPECT_EQ(ResumedFromStart(J{{"event", "start"}}), std::nullopt);
  EXPECT_EQ(ResumedFromStart(J{{"resumed_from", {{"path", "p"}}}}), std::nullopt);
  std::optional<ResumedFrom> r =
      ResumedFromStart(J{{"resumed_from", {{"step", 40}, {"path", "/c/ckpt-00000040.safetensors"},
                                           {"train_ms", 12.5}}}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->step, 40);
  EXPECT_EQ(r->path, "/c/ckpt-00000040.safetensors");
}

}  // namespace
}  // namespace ablate::worker
