// The device optimizers against the CPU's: Adam must agree to fp32 rounding over several steps;
// Muon runs Newton–Schulz in bf16 (as the records do) where the CPU runs fp32, so its updates
// agree to bf16 accuracy. Covers merged-qkv slices (one batch), tall (transposed) and wide
// matrices, Nesterov on and off, and momentum carried across steps.
#include <gtest/gtest.h>

#include <vector>

#include "tests/trainer/cuda_test_util.h"
#include "trainer/cuda/adam.h"
#include "trainer/cuda/muon.h"
#include "trainer/collectives/in_process_communicator.h"
#include "trainer/optim/adam.h"
#include "trainer/optim/muon.h"

namespace ablate {
namespace {

using testing::DeviceTensor;
using testing::Random;
using testing::RelError;

class CudaOptim : public testing::CudaTest {};

TEST_F(CudaOptim, AdamMatchesCpuOverSteps) {
  std::vector<AdamSpan> spans = {{0, 1000, 0.3}, {1000, 2, 0.04}, {1002, 4097, 0.008}};
  int64_t total = 1002 + 4097;
  AdamConfig config{0.8, 0.95, 1e-10};
  Adam cpu_adam(config, spans);
  cuda::Adam gpu_adam(config, spans);
  ASSERT_TRUE(gpu_adam.Init(ctx()).ok());
  std::vector<float> params = Random(total);
  DeviceTensor<float> d_params(ctx(), params), d_grads(ctx(), total);
  for (double mult : {1.0, 0.5, 0.1}) {
    std::vector<float> grads = Random(total, -0.01f, 0.01f);
    d_grads.Set(grads);
    ABLATE_EXPECT_OP(ctx(), gpu_adam.Step(ctx(), d_params.get(), d_grads.get(), mult));
    cpu_adam.Step(params.data(), grads.data(), mult);
    EXPECT_LT(RelError(d_params.Get(), params), 1e-6) << "lr multiplier " << mult;
  }
}

// Runs two steps of each Muon on the same matrices and compares what each subtracted.
void CheckMuon(cuda::CudaContext& ctx, bool nesterov) {
  std::vector<MuonMatrix> matrices = {{0, 48, 48},     {2304, 48, 48},
                                      {4608, 48, 48},    // a merged qkv's slices
                                      {6912, 96, 48},    // tall: orthogonalised transposed
                                      {11520, 48, 96},   // wide
                                      {16128, 96, 48}};  // a second tall one, same batch
  int64_t total = 16128 + 96 * 48;
  MuonConfig config;
  config.nesterov = nesterov;
  config.momentum.warmup_steps = 300;
  Muon cpu_muon(config, matrices, 0, 1);
  cuda::Muon gpu_muon(config, matrices);
  ASSERT_TRUE(gpu_muon.Init(ctx).ok());
  InProcessGroup group(1);
  InProcessCommunicator comm(&group, 0);
  std::vector<float> params = Random(total);
  DeviceTensor<float> d_params(ctx, params), d_grads(ctx, total);
  for (int64_t step = 0; step < 2; ++step) {
    std::vector<float> grads = Random(total), before = params;
    d_grads.Set(grads);
    d_params.Set(params);  // both start each step from the CPU's parameters
    ABLATE_EXPECT_OP(ctx, gpu_muon.Step(ctx, d_params.get(), d_grads.get(), 0.7, step));
    ASSERT_TRUE(cpu_muon.Step(params.data(), grads.data(), 0.7, step, comm).ok());
    std::vector<float> gpu = d_params.Get(), gpu_delta(total), cpu_delta(total);
    for (int64_t i = 0; i < total; ++i) {
      gpu_delta[i] = gpu[i] - before[i];
      cpu_delta[i] = params[i] - before[i];
    }
    EXPECT_LT(RelError(gpu_delta, cpu_delta), 3e-2) << "step " << step << " nesterov " << nesterov;
  }
}

TEST_F(CudaOptim, MuonMatchesCpuToBf16Accuracy) {
  CheckMuon(ctx(), true);
  CheckMuon(ctx(), false);
}

}  // namespace
}  // namespace ablate
