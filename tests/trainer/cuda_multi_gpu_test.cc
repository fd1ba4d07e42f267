// NCCL on real GPUs (label gpu): the communicator on one GPU (world size 1), its collectives on
// two, and training on two GPUs against one with the same global batch. Skips, naming why,
// without a device, and the two-GPU tests below two devices.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "tests/trainer/train_fixture.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/collectives/nccl_communicator.h"
#include "trainer/collectives/nccl_library.h"
#include "trainer/train/trainer.h"

namespace ablate {
namespace {

using J = nlohmann::json;

int DeviceCount() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

#define REQUIRE_GPUS(n)                                                                    \
  do {                                                                                     \
    Result<cuda::DeviceInfo> info = cuda::ProbeDevice(0);                                  \
    if (!info.ok()) GTEST_SKIP() << info.error().message;                                  \
    if (DeviceCount() < (n)) GTEST_SKIP() << "needs " #n " GPUs; found " << DeviceCount(); \
  } while (0)

std::unique_ptr<NcclLibrary> LoadNccl() {
  Result<std::unique_ptr<NcclLibrary>> lib = NcclLibrary::Load();
  EXPECT_TRUE(lib.ok()) << lib.error().message;
  return lib.ok() ? std::move(lib).value() : nullptr;
}

std::vector<std::unique_ptr<NcclCommunicator>> Join(const NcclLibrary& lib,
                                                    const std::vector<int>& devices) {
  Result<std::string> id = lib.NewUniqueId();
  EXPECT_TRUE(id.ok()) << id.error().message;
  auto comms = NcclCommunicator::CreateLocal(lib, *id, int(devices.size()), 0, devices);
  EXPECT_TRUE(comms.ok()) << comms.error().message;
  if (!comms.ok()) return {};
  return std::move(comms).value();
}

TEST(NcclCommunicator, WorldSizeOneOnOneGpu) {
  REQUIRE_GPUS(1);
  std::unique_ptr<NcclLibrary> lib = LoadNccl();
  ASSERT_NE(lib, nullptr);
  auto comms = Join(*lib, {0});
  ASSERT_EQ(comms.size(), 1u);
  Communicator& c = *comms[0];
  EXPECT_EQ(c.world_size(), 1);
  std::vector<float> v = {1.5f, -2.f};
  ASSERT_TRUE(c.AllReduce(v, ReduceOp::kAvg).ok());
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.f}));
  std::vector<float> all(2);
  ASSERT_TRUE(c.AllGather(std::vector<float>{3.f, 4.f}, all).ok());
  EXPECT_EQ(all, (std::vector<float>{3.f, 4.f}));
  ASSERT_NE(c.device(), nullptr);
  cuda::DeviceBuffer<float> d;
  ASSERT_TRUE(d.Allocate(4, "test").ok());
  std::vector<float> host = {1, 2, 3, 4}, back(4);
  ASSERT_EQ(cudaMemcpy(d.get(), host.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_TRUE(c.device()->AllReduce(d.get(), 4, WireType::kF32, ReduceOp::kSum).ok());
  ASSERT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(c.device()->stream())), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back.data(), d.get(), 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  NcclCommunicator::DestroyAll(comms);
}

TEST(NcclCommunicator, CollectivesOnTwoGpus) {
  REQUIRE_GPUS(2);
  std::unique_ptr<NcclLibrary> lib = LoadNccl();
  ASSERT_NE(lib, nullptr);
  auto comms = Join(*lib, {0, 1});
  ASSERT_EQ(comms.size(), 2u);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      Communicator& c = *comms[size_t(r)];
      float x = float(r);
      std::vector<float> sum = {x, 2 * x};
      ASSERT_TRUE(c.AllReduce(sum, ReduceOp::kSum).ok());
      EXPECT_EQ(sum, (std::vector<float>{1, 2}));
      std::vector<float> all(2);
      ASSERT_TRUE(c.AllGather(std::vector<float>{x * 10}, all).ok());
      EXPECT_EQ(all, (std::vector<float>{0, 10}));
      std::vector<float> send = {x, x + 1}, part(1);
      ASSERT_TRUE(c.ReduceScatter(send, part, ReduceOp::kSum).ok());
      EXPECT_EQ(part[0], r == 0 ? 1.f : 3.f);
      std::vector<float> b = {x + 7};
      ASSERT_TRUE(c.Broadcast(b, 1).ok());
      EXPECT_EQ(b[0], 8.f);
    });
  }
  for (std::thread& t : threads) t.join();
  NcclCommunicator::DestroyAll(comms);
}

using testing::Losses;

std::vector<J> RunCuda(const std::vector<int>& gpus, const J& config, const testing::TempDir& dir,
                       bool nccl_on_one_gpu = false) {
  TrainOptions o;
  o.nccl_on_one_gpu = nccl_on_one_gpu;
  o.backend = Backend::kCuda;
  o.gpus = gpus;
  o.threads = 2;
  return testing::TrainEvents(config, o, dir);
}

// Same global batch (256 tokens: 2 micro-batches on one GPU, 1 on each of two), same seed and
// data: the curves agree within bf16 noise; distributed Muon, the overlapped all-reduce and the
// averaged validation loss are all on the path.
TEST(MultiGpuTraining, TwoGpusMatchOne) {
  REQUIRE_GPUS(2);
  testing::TempDir dir;
  testing::WriteShards(dir);
  J config = testing::SmallGpuTrainConfig({{"num_iterations", 20},
                                           {"warmdown_iters", 5},
                                           {"val_every", 10},
                                           {"embed_shortcut", true},
                                           {"unet_skips", true},
                                           {"value_embeds", 1},
                                           {"merged_qkv", true}});
  std::vector<J> one = RunCuda({0}, config, dir);
  std::vector<J> two = RunCuda({0, 1}, config, dir);
  ASSERT_FALSE(two.empty());
  EXPECT_EQ(two.front()["world_size"], 2);
  EXPECT_TRUE(two.front().contains("gpu_memory"));
  EXPECT_GT(two.back()["gpu_memory"]["peak_used_bytes"].get<int64_t>(), 0);
  std::vector<double> a = Losses(one), b = Losses(two);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(b[i], a[i], 3e-2 * a[i]) << "event " << i;
  }
  EXPECT_EQ(two.back()["status"], "ok");
}

// The multi-GPU step (gradient ranges all-reduced on the communication stream from the
// backward's hooks, the optimizer waiting on events) at world size 1 through NCCL: an average
// over one rank changes nothing, so the curve is the in-process run's.
TEST(MultiGpuTraining, NcclPathAtWorldSizeOneMatchesInProcess) {
  REQUIRE_GPUS(1);
  testing::TempDir dir;
  testing::WriteShards(dir);
  J config = testing::SmallGpuTrainConfig(
      {{"num_iterations", 10}, {"val_every", 5}, {"unet_skips", true}, {"merged_qkv", true}});
  std::vector<double> plain = Losses(RunCuda({0}, config, dir));
  std::vector<double> nccl = Losses(RunCuda({0}, config, dir, true));
  ASSERT_EQ(plain.size(), nccl.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_NEAR(nccl[i], plain[i], 1e-6 * std::abs(plain[i])) << "event " << i;
  }
}

// GPU 1 is nearly full before the run starts, so rank 1 fails to allocate its model while rank 0
// goes on to validation and its first step's collectives. Rank 0 must stop waiting for its
// peer (abort signal, polled waits, ncclCommAbort) and the run must end with rank 1's error,
// not hang. A hang ends in ctest's timeout; the wait below turns it into a message first.
TEST(MultiGpuTraining, ARankThatFailsAloneEndsTheRunWithItsErrorInsteadOfAHang) {
  REQUIRE_GPUS(2);
  testing::TempDir dir;
  testing::WriteShards(dir, 200000, 20000);
  // ~150M parameters with their gradients and optimizer state, and ~4 GB of activations: far
  // more than the 2 GB left on GPU 1, which is room enough for NCCL and the CUDA context.
  J config = testing::TinyTrainConfig({{"n_layer", 12},
                                       {"model_dim", 1024},
                                       {"n_head", 8},
                                       {"head_dim", 128},
                                       {"seq_len", 1024},
                                       {"device_batch_tokens", 8192},
                                       {"batch_tokens", 16384},
                                       {"num_iterations", 3},
                                       {"val_every", 1},
                                       {"val_tokens", 16384}});
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  void* hog = nullptr;
  size_t leave = size_t(2) << 30;
  ASSERT_GT(free_bytes, leave);
  ASSERT_EQ(cudaMalloc(&hog, free_bytes - leave), cudaSuccess);
  TrainOptions o;
  o.backend = Backend::kCuda;
  o.gpus = {0, 1};
  o.threads = 2;
  o.train_files = {dir.File("train_000.bin")};
  o.val_files = {dir.File("val_000.bin")};
  MemorySink sink;
  std::future<TrainOutcome> run =
      std::async(std::launch::async, [&] { return Train(config, o, sink); });
  if (run.wait_for(std::chrono::minutes(3)) != std::future_status::ready) {
    ADD_FAILURE() << "the run hung after rank 1 failed";
    std::_Exit(1);  // the hung rank threads cannot be joined
  }
  TrainOutcome out = run.get();
  (void)cudaSetDevice(1);
  (void)cudaFree(hog);
  EXPECT_EQ(out.status, TrainStatus::kFailed);
  EXPECT_NE(out.message.find("rank 1 (GPU 1)"), std::string::npos) << out.message;
  EXPECT_NE(out.message.find("cudaMalloc"), std::string::npos) << out.message;
  std::vector<J> events = sink.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["event"], "end");
  EXPECT_EQ(events.back()["status"], "failed");
}

TEST(MultiGpuTraining, OneGpuReportsMemory) {
  REQUIRE_GPUS(1);
  testing::TempDir dir;
  testing::WriteShards(dir);
  J config = testing::TinyTrainConfig({{"model_dim", 64}, {"n_head", 1}, {"head_dim", 64}});
  std::vector<J> events = RunCuda({0}, config, dir);
  ASSERT_GE(events.size(), 2u);
  const J& m = events.front()["gpu_memory"];
  EXPECT_GT(m["used_bytes"].get<int64_t>(), 0);
  EXPECT_GT(m["model_bytes"].get<int64_t>(), 0);
  EXPECT_GE(events.back()["gpu_memory"]["peak_used_bytes"].get<int64_t>(),
            m["used_bytes"].get<int64_t>());
}

}  // namespace
}  // namespace ablate
