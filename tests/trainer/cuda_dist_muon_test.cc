// Distributed Muon on the device, on one GPU: the ranks of a world of 2 and 3 run one after the
// other against a stand-in for the all-gather (a device copy of every rank's part into every
// rank's gathered buffer, in rank order), and each rank's parameters must equal world 1's. This
// checks the CUDA backend's sharding and gather order (MuonGatherLayout, shared with the CPU
// twin) without NCCL; trainer_multi_gpu_test checks the real thing on two GPUs.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/trainer/cuda_test_util.h"
#include "trainer/cuda/muon.h"

namespace ablate {
namespace {

using testing::DeviceTensor;
using testing::MaxAbsError;
using testing::Random;

// Records each rank's AllGather; Complete() performs them all. Same stream as the compute, so
// the events the optimizer records order nothing new.
class DeferredGather : public DeviceCollectives {
 public:
  explicit DeferredGather(cudaStream_t stream) : stream_(stream) {}
  void* stream() const override { return stream_; }
  Status AllReduce(void*, int64_t, WireType, ReduceOp) override { return Error{"unused", ""}; }
  Status ReduceScatter(const void*, void*, int64_t, WireType, ReduceOp) override {
    return Error{"unused", ""};
  }
  Status AllGather(const void* send, void* recv, int64_t n, WireType type) override {
    calls_.push_back({send, recv, n * (type == WireType::kBf16 ? 2 : 4)});
    return {};
  }
  Status Health() override { return {}; }
  // Every rank's recv ← all ranks' sends, rank r's at r·bytes.
  void Complete() {
    for (const Call& to : calls_) {
      for (size_t r = 0; r < calls_.size(); ++r) {
        EXPECT_EQ(cudaMemcpyAsync(static_cast<char*>(to.recv) + r * to.bytes, calls_[r].send,
                                  size_t(to.bytes), cudaMemcpyDeviceToDevice, stream_),
                  cudaSuccess);
      }
    }
    calls_.clear();
  }

 private:
  struct Call {
    const void* send;
    void* recv;
    int64_t bytes;
  };
  cudaStream_t stream_;
  std::vector<Call> calls_;
};

class CudaDistMuon : public testing::CudaTest {};

TEST_F(CudaDistMuon, ShardedRanksEqualOneRank) {
  // Seven matrices, two shapes batched and a tall one, so rounds are ragged for world 2 and 3.
  std::vector<MuonMatrix> matrices = {{0, 48, 48},    {2304, 48, 48},  {4608, 48, 48},
                                      {6912, 96, 48}, {11520, 48, 96}, {16128, 96, 48},
                                      {20736, 48, 48}};
  int64_t total = 20736 + 48 * 48;
  MuonConfig config;
  std::vector<float> start = Random(total);
  std::vector<std::vector<float>> grads = {Random(total), Random(total)};

  cuda::Muon one(config, matrices);
  ASSERT_TRUE(one.Init(ctx()).ok());
  DeviceTensor<float> p_one(ctx(), start), g(ctx(), total);
  for (int64_t step = 0; step < 2; ++step) {
    g.Set(grads[step]);
    ABLATE_EXPECT_OP(ctx(), one.Step(ctx(), p_one.get(), g.get(), 1.0, step));
  }
  std::vector<float> want = p_one.Get();
  EXPECT_GT(MaxAbsError(want, start), 1e-3);  // the step did move the parameters

  for (int world : {2, 3}) {
    std::vector<std::unique_ptr<cuda::Muon>> ranks;
    std::vector<std::unique_ptr<DeviceTensor<float>>> params;
    for (int r = 0; r < world; ++r) {
      ranks.push_back(std::make_unique<cuda::Muon>(config, matrices, r, world));
      ASSERT_TRUE(ranks.back()->Init(ctx()).ok());
      params.push_back(std::make_unique<DeviceTensor<float>>(ctx(), start));
    }
    DeferredGather gather(ctx().stream());
    for (int64_t step = 0; step < 2; ++step) {
      g.Set(grads[step]);
      for (int r = 0; r < world; ++r) {
        ABLATE_EXPECT_OP(ctx(),
                         ranks[r]->Launch(ctx(), params[r]->get(), g.get(), 1.0, step, &gather));
      }
      gather.Complete();
      for (int r = 0; r < world; ++r) {
        ABLATE_EXPECT_OP(ctx(), ranks[r]->Finish(ctx(), params[r]->get(), &gather));
      }
    }
    for (int r = 0; r < world; ++r) {
      // Batches of other sizes may pick other GEMM kernels: bf16 rounding of the NS iterate may
      // differ in the last bit (≈1e-5 here); a misplaced update would differ by ≈1e-3.
      EXPECT_LT(MaxAbsError(params[r]->Get(), want), 1e-4) << "world " << world << " rank " << r;
    }
  }
}

}  // namespace
}  // namespace ablate
