// The training loop with steps queued ahead (what the GPU runs: step s + 1 is queued before step
// s is collected), driven on the CPU through TrainOptions::steps_in_flight so that its
// bookkeeping is tested on every machine: the same numbers as the step-by-step loop, every step
// that ran reported once, and decisions (stop, a failed data read) taken by all ranks together.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "tests/trainer/train_fixture.h"
#include "trainer/data/shard_writer.h"
#include "trainer/train/trainer.h"

namespace ablate {
namespace {

using J = nlohmann::json;

struct Finished {
  TrainOutcome outcome;
  std::vector<J> events;
};

Finished TrainRun(const J& config, int world, int in_flight,
                  const std::vector<std::string>& train_files, const testing::TempDir& dir,
                  const std::atomic<bool>* stop = nullptr) {
  TrainOptions o;
  o.world_size = world;
  o.threads = world;
  o.steps_in_flight = in_flight;
  o.stop = stop;
  o.train_files = train_files;
  o.val_files = {dir.File("val_000.bin")};
  MemorySink sink;
  Finished r;
  r.outcome = ablate::Train(config, o, sink);
  r.events = sink.events();
  return r;
}

// "step 1, step 2, val 3, ..." with the step numbers the events carry.
std::vector<std::string> Sequence(const std::vector<J>& events) {
  std::vector<std::string> out;
  for (const J& e : events) {
    std::string kind = e["event"];
    if (kind == "step" || kind == "val") {
      out.push_back(kind + " " + std::to_string(e["step"].get<int64_t>()));
    } else {
      out.push_back(kind);
    }
  }
  return out;
}

double SumStepMs(const std::vector<J>& events, int64_t untimed) {
  double sum = 0;
  for (const J& e : events) {
    if (e["event"] == "step" && e["step"].get<int64_t>() > untimed)
      sum += e["step_ms"].get<double>();
  }
  return sum;
}

TEST(Pipeline, QueuedAheadGivesTheStepByStepNumbers) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  J config = testing::TinyTrainConfig({{"value_residual", true}});
  for (int world : {1, 2}) {
    Finished plain = TrainRun(config, world, 0, {dir.File("train_000.bin")}, dir);
    Finished ahead = TrainRun(config, world, 1, {dir.File("train_000.bin")}, dir);
    ASSERT_EQ(plain.outcome.status, TrainStatus::kOk) << plain.outcome.message;
    ASSERT_EQ(ahead.outcome.status, TrainStatus::kOk) << ahead.outcome.message;
    // Same events in the same order: each step once, validation after the steps before it.
    EXPECT_EQ(Sequence(ahead.events), Sequence(plain.events)) << "world " << world;
    std::vector<double> a = testing::Losses(ahead.events), p = testing::Losses(plain.events);
    ASSERT_EQ(a.size(), 6u + 3u);
    EXPECT_EQ(a, p) << "world " << world;  // the same arithmetic, bit for bit
    const J& end = ahead.events.back();
    EXPECT_EQ(end["steps"], 6);
    // train_ms is the sum of the timed steps' step_ms (step 0 is untimed).
    EXPECT_NEAR(end["train_ms"].get<double>(), SumStepMs(ahead.events, 1), 1e-6);
  }
}

TEST(Pipeline, AStopReportsEveryStepThatRan) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  J config = testing::TinyTrainConfig({{"val_every", 0}});
  std::atomic<bool> stop{true};  // seen at the end of step 0
  for (int in_flight : {0, 1}) {
    Finished r = TrainRun(config, 2, in_flight, {dir.File("train_000.bin")}, dir, &stop);
    EXPECT_EQ(r.outcome.status, TrainStatus::kCancelled) << r.outcome.message;
    // Step 0 asks to stop; with one step queued ahead, step 1 had been queued by then and ran.
    std::vector<std::string> want = {"start", "step 1"};
    if (in_flight == 1) want.push_back("step 2");
    want.push_back("end");
    EXPECT_EQ(Sequence(r.events), want) << "in flight " << in_flight;
    EXPECT_EQ(r.events.back()["status"], "cancelled");
    EXPECT_EQ(r.events.back()["steps"], in_flight + 1);
  }
}

TEST(Pipeline, AnUnreadableShardEndsTheRunOnEveryRankAtTheSameStep) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  // Three global batches (128 tokens + 1) fit the first shard; step 3 moves to the second, whose
  // header is fine but which holds a token outside the 64-token vocabulary.
  ASSERT_TRUE(WriteShard(dir.File("train_a.bin"), testing::SyntheticTokens(3 * 128 + 1, 7)).ok());
  std::vector<uint16_t> bad = testing::SyntheticTokens(1000, 8);
  bad[500] = 64;
  ASSERT_TRUE(WriteShard(dir.File("train_b.bin"), bad).ok());
  J config = testing::TinyTrainConfig({{"val_every", 0}});
  for (int in_flight : {0, 1}) {
    Finished r =
        TrainRun(config, 2, in_flight, {dir.File("train_a.bin"), dir.File("train_b.bin")}, dir);
    EXPECT_EQ(r.outcome.status, TrainStatus::kFailed) << "in flight " << in_flight;
    EXPECT_NE(r.outcome.message.find("train_b.bin"), std::string::npos) << r.outcome.message;
    std::vector<std::string> seq = Sequence(r.events);
    std::vector<std::string> want = {"start", "step 1", "step 2", "step 3", "error", "end"};
    EXPECT_EQ(seq, want) << "in flight " << in_flight;
    EXPECT_EQ(r.events.back()["status"], "failed");
    EXPECT_EQ(r.events.back()["steps"], 3);
  }
}

TEST(Pipeline, StepsInFlightOutsideZeroOrOneIsRefused) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  Finished r = TrainRun(testing::TinyTrainConfig(), 1, 2, {dir.File("train_000.bin")}, dir);
  EXPECT_EQ(r.outcome.status, TrainStatus::kInvalid);
  EXPECT_NE(r.outcome.message.find("steps in flight"), std::string::npos) << r.outcome.message;
}

}  // namespace
}  // namespace ablate
