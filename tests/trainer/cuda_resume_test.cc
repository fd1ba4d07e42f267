// GPU checkpoint and resume (label gpu; skips without a device): 20 steps straight against 10,
// a checkpoint, and 10 resumed, on the CUDA backend with bf16 embeddings (bf16 Adam moments on
// the device); and a CPU checkpoint resumed on the GPU (the optimizer states share a layout).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/trainer/cuda_test_util.h"
#include "tests/trainer/train_fixture.h"

namespace ablate {
namespace {

using J = nlohmann::json;

class CudaResume : public testing::CudaTest {};

J Config() {
  return testing::SmallGpuTrainConfig({{"num_iterations", 20},
                                       {"warmdown_iters", 6},
                                       {"val_every", 5},
                                       {"embed_shortcut", true},
                                       {"unet_skips", true},
                                       {"muon.momentum_warmup_steps", 8},
                                       {"muon.momentum_form", "lerp"},
                                       {"param_dtype.embed", "bf16"}});
}

std::vector<double> StepLosses(const std::vector<J>& events) {
  std::vector<double> out;
  for (const J& e : events) {
    if (e["event"] == "step") out.push_back(e["train_loss"].get<double>());
  }
  return out;
}

TrainOptions Gpu() {
  TrainOptions o;
  o.backend = Backend::kCuda;
  o.threads = 2;
  return o;
}

TEST_F(CudaResume, StoppedAtTenAndResumedStaysWithinBf16OfStraight) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  std::vector<double> straight = StepLosses(testing::TrainEvents(Config(), Gpu(), dir));
  TrainOptions first = Gpu();
  first.max_steps = 10;
  first.checkpoint_dir = dir.File("ckpt");
  std::vector<double> a = StepLosses(testing::TrainEvents(Config(), first, dir));
  TrainOptions second = Gpu();
  second.resume_dir = dir.File("ckpt");
  std::vector<J> resumed_events = testing::TrainEvents(Config(), second, dir);
  std::vector<double> b = StepLosses(resumed_events);
  ASSERT_EQ(straight.size(), 20u);
  ASSERT_EQ(a.size(), 10u);
  ASSERT_EQ(b.size(), 10u);  // steps 11..20, none repeated
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_NEAR(a[i], straight[i], 1e-2 * straight[i]) << "step " << i + 1;
    EXPECT_NEAR(b[i], straight[10 + i], 1e-2 * straight[10 + i]) << "step " << 11 + i;
  }
  EXPECT_EQ(resumed_events.front()["resumed_from"]["step"], 10);
}

TEST_F(CudaResume, CpuCheckpointResumesOnTheGpu) {
  testing::TempDir dir;
  testing::WriteShards(dir);
  TrainOptions cpu;
  cpu.threads = 2;
  std::vector<double> straight = StepLosses(testing::TrainEvents(Config(), cpu, dir));
  TrainOptions first = cpu;
  first.max_steps = 10;
  first.checkpoint_dir = dir.File("ckpt");
  (void)testing::TrainEvents(Config(), first, dir);
  TrainOptions second = Gpu();
  second.resume_dir = dir.File("ckpt");
  std::vector<double> b = StepLosses(testing::TrainEvents(Config(), second, dir));
  ASSERT_EQ(b.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_NEAR(b[i], straight[10 + i], 3e-2 * straight[10 + i]) << "step " << 11 + i;
  }
}

}  // namespace
}  // namespace ablate
