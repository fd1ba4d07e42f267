// Distributed semantics on the CPU: the in-process collectives, and N ranks (threads) with the
// same global batch matching one rank within fp32 tolerance, distributed Muon included.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/trainer/train_fixture.h"
#include "trainer/collectives/in_process_communicator.h"
#include "trainer/train/trainer.h"

namespace ablate {
namespace {

using J = nlohmann::json;

template <class Fn>
void OnRanks(int world, const Fn& fn) {
  InProcessGroup group(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      InProcessCommunicator comm(&group, r);
      fn(comm);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(InProcessCommunicator, Collectives) {
  OnRanks(3, [](Communicator& c) {
    float r = float(c.rank());
    std::vector<float> sum = {r, 2 * r};
    ASSERT_TRUE(c.AllReduce(sum, ReduceOp::kSum).ok());
    EXPECT_EQ(sum, (std::vector<float>{3, 6}));
    std::vector<float> avg = {r};
    ASSERT_TRUE(c.AllReduce(avg, ReduceOp::kAvg).ok());
    EXPECT_EQ(avg[0], 1.f);
    std::vector<float> all(3);
    ASSERT_TRUE(c.AllGather(std::vector<float>{r * 10}, all).ok());
    EXPECT_EQ(all, (std::vector<float>{0, 10, 20}));
    std::vector<float> send = {r, r, r + 1, r + 1, r + 2, r + 2}, part(2);
    ASSERT_TRUE(c.ReduceScatter(send, part, ReduceOp::kSum).ok());
    float want = 3 + 3 * float(c.rank());
    EXPECT_EQ(part, (std::vector<float>{want, want}));
    std::vector<float> b = {r + 7};
    ASSERT_TRUE(c.Broadcast(b, 2).ok());
    EXPECT_EQ(b[0], 9.f);
  });
}

using testing::Losses;

std::vector<J> RunTraining(int world, const J& config, const testing::TempDir& dir) {
  TrainOptions o;
  o.world_size = world;
  o.threads = world;
  return testing::TrainEvents(config, o, dir);
}

TEST(Distributed, OneTwoFourRanksMatch) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  // 12 Muon matrices (merged qkv slices included) spread over the ranks.
  J config = testing::TinyTrainConfig({{"merged_qkv", true}, {"embed_shortcut", true},
                                       {"value_residual", true}});
  std::vector<double> one = Losses(RunTraining(1, config, dir));
  ASSERT_EQ(one.size(), 6u + 3u);  // 6 steps, val at 0, 3, 6
  for (int world : {2, 4}) {
    std::vector<double> many = Losses(RunTraining(world, config, dir));
    ASSERT_EQ(many.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_NEAR(many[i], one[i], 2e-4 * std::max(1.0, std::abs(one[i])))
          << "world " << world << " event " << i;
    }
  }
  EXPECT_LT(one.back(), one.front());  // it learns
}

TEST(Distributed, StartEventDescribesTheRun) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  std::vector<J> events = RunTraining(2, testing::TinyTrainConfig(), dir);
  const J& start = events.front();
  EXPECT_EQ(start["event"], "start");
  EXPECT_EQ(start["world_size"], 2);
  EXPECT_EQ(start["grad_accum_steps"], 2);
  EXPECT_EQ(start["param_groups"][0]["name"], "embed.weight");
  EXPECT_EQ(start["config_hash"].get<std::string>().size(), 64u);
  const J& end = events.back();
  EXPECT_EQ(end["event"], "end");
  EXPECT_EQ(end["status"], "ok");
  EXPECT_EQ(end["steps"], 6);
  // The loss starts near ln 64 ≈ 4.16 and the target is 4.0, so it is met after step 0.
  EXPECT_FALSE(end["time_to_target_ms"].is_null());
}

}  // namespace
}  // namespace ablate
