// CudaEngine: parameters are initialised on the host with the CPU's InitParams (same values for
// the same seed on both backends), uploaded once, and from then on live on the device.
#include "trainer/cuda/cuda_engine.h"

#include <vector>

#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/gpt.h"
#include "trainer/cuda/optimizer.h"
#include "trainer/model/param_init.h"

namespace ablate::cuda {
namespace {

class CudaEngine : public Engine {
 public:
  CudaEngine(std::unique_ptr<CudaContext> ctx, std::unique_ptr<Gpt> gpt, const OptimConfig& optim)
      : ctx_(std::move(ctx)), gpt_(std::move(gpt)), optimizer_(optim, gpt_->device_layout()) {}

  Status Init(uint64_t seed) override {
    std::vector<float> host(size_t(gpt_->layout().total()));
    InitParams(gpt_->config(), gpt_->layout(), seed, host.data());
    ABLATE_RETURN_IF_ERROR(gpt_->SetParams(host.data()));
    return optimizer_.Init(*ctx_);
  }

  Status ZeroGrads() override { return gpt_->ZeroGrads(); }

  Status Accumulate(const int32_t* tokens, const std::vector<int64_t>& windows, int64_t divisor,
                    Pass pass) override {
    return pass == Pass::kTrain ? gpt_->ForwardBackward(tokens, windows, divisor)
                                : gpt_->Forward(tokens, windows, divisor);
  }

  Result<float> TakeLoss() override { return gpt_->TakeLoss(); }

  Status Step(int64_t step) override {
    ABLATE_RETURN_IF_ERROR(optimizer_.Step(*ctx_, gpt_->params(), gpt_->grads(), step));
    return gpt_->RefreshWeights();
  }

  Status Synchronize() override { return ctx_->Synchronize(); }

 private:
  std::unique_ptr<CudaContext> ctx_;  // first in, last out: outlives the model and optimizer
  std::unique_ptr<Gpt> gpt_;
  Optimizer optimizer_;
};

}  // namespace

Result<std::unique_ptr<Engine>> MakeCudaEngine(const RunPlan& plan, Communicator& comm) {
  if (comm.world_size() != 1) {
    return Error{"backend cuda: one GPU per run in this version (world size " +
                     std::to_string(comm.world_size()) + ")",
                 "world_size"};
  }
  Result<std::unique_ptr<CudaContext>> ctx = CudaContext::Create(plan.device);
  if (!ctx.ok()) return ctx.error();
  Result<std::unique_ptr<Gpt>> gpt =
      Gpt::Create(**ctx, plan.model, plan.micro_batch, plan.model.seq_len);
  if (!gpt.ok()) return gpt.error();
  std::unique_ptr<Engine> engine(
      new CudaEngine(std::move(ctx).value(), std::move(gpt).value(), plan.optim));
  return engine;
}

}  // namespace ablate::cuda
