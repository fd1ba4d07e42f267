// CudaEngine: parameters are initialised on the host with the CPU's InitParams (same values for
// the same seed on both backends and on every rank), uploaded once, and from then on live on
// the device. On several ranks the gradient all-reduce runs on the communicator's stream: on the
// step's last micro-batch each block's gradients are reduced as soon as its backward is queued,
// the embeddings, head and global scalars after the whole backward; the optimizer's stream
// waits for the last of them (events, no host wait).
#include "trainer/cuda/cuda_engine.h"

#include <algorithm>
#include <vector>

#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/cuda_event.h"
#include "trainer/cuda/gpt.h"
#include "trainer/cuda/optimizer.h"
#include "trainer/model/param_init.h"

namespace ablate::cuda {
namespace {

class CudaEngine : public Engine {
 public:
  CudaEngine(std::unique_ptr<CudaContext> ctx, std::unique_ptr<Gpt> gpt, const OptimConfig& optim,
             Communicator& comm)
      : ctx_(std::move(ctx)),
        gpt_(std::move(gpt)),
        optimizer_(optim, gpt_->device_layout(), comm.rank(), comm.world_size()),
        coll_(comm.device()),
        starts_(gpt_->device_layout().BlockStarts(gpt_->config().n_layer)) {}

  Status Init(uint64_t seed) override {
    std::vector<float> host(size_t(gpt_->layout().total()));
    InitParams(gpt_->config(), gpt_->layout(), seed, host.data());
    ABLATE_RETURN_IF_ERROR(gpt_->SetParams(host.data()));
    if (coll_ != nullptr) {
      ABLATE_RETURN_IF_ERROR(grads_ready_.Create());
      ABLATE_RETURN_IF_ERROR(grads_reduced_.Create());
    }
    ABLATE_RETURN_IF_ERROR(optimizer_.Init(*ctx_));
    ABLATE_RETURN_IF_ERROR(ctx_->Synchronize());
    return SampleMemory();
  }

  Status ZeroGrads() override {
    micro_ = 0;
    return gpt_->ZeroGrads();
  }

  Status Accumulate(const int32_t* tokens, const std::vector<int64_t>& windows, int64_t divisor,
                    Pass pass) override {
    if (pass == Pass::kEval) return gpt_->Forward(tokens, windows, divisor);
    bool last = ++micro_ == divisor;
    if (coll_ == nullptr || !last) return gpt_->ForwardBackward(tokens, windows, divisor);
    gpt_->SetBlockGradsHook([this](int64_t i) { return ReduceRange(starts_[i], starts_[i + 1]); });
    Status s = gpt_->ForwardBackward(tokens, windows, divisor);
    gpt_->SetBlockGradsHook(nullptr);
    ABLATE_RETURN_IF_ERROR(s);
    ABLATE_RETURN_IF_ERROR(ReduceRange(0, starts_[0]));  // embeddings, head, global scalars
    reduced_ = true;
    return {};
  }

  Result<float> TakeLoss() override { return gpt_->TakeLoss(); }

  Status Step(int64_t step) override {
    if (coll_ != nullptr) {
      if (!reduced_) return Error{"Step without a completed train micro-batch sequence", ""};
      reduced_ = false;
      ABLATE_RETURN_IF_ERROR(grads_reduced_.Order(CommStream(), ctx_->stream()));
    }
    ABLATE_RETURN_IF_ERROR(optimizer_.Step(*ctx_, gpt_->params(), gpt_->grads(), step, coll_));
    return gpt_->RefreshWeights();
  }

  Status Synchronize() override { return ctx_->Synchronize(); }

  std::optional<DeviceMemory> Memory() override {
    if (!SampleMemory().ok()) return std::nullopt;
    return memory_;
  }

 private:
  cudaStream_t CommStream() const { return static_cast<cudaStream_t>(coll_->stream()); }

  // grads [begin, end) averaged over ranks on the communication stream, after what the compute
  // stream has queued so far.
  Status ReduceRange(int64_t begin, int64_t end) {
    if (end <= begin) return {};
    ABLATE_RETURN_IF_ERROR(grads_ready_.Order(ctx_->stream(), CommStream()));
    return coll_->AllReduce(gpt_->grads() + begin, end - begin, WireType::kF32, ReduceOp::kAvg);
  }

  // Device memory in use now (cudaMemGetInfo: every allocation on the device, NCCL's and the
  // runtime's included) and its high-water mark over the samples taken.
  Status SampleMemory() {
    size_t free_bytes = 0, total_bytes = 0;
    ABLATE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    memory_.used_bytes = int64_t(total_bytes - free_bytes);
    memory_.total_bytes = int64_t(total_bytes);
    memory_.peak_used_bytes = std::max(memory_.peak_used_bytes, memory_.used_bytes);
    memory_.model_bytes = gpt_->allocated_bytes();
    return {};
  }

  std::unique_ptr<CudaContext> ctx_;  // first in, last out: outlives the model and optimizer
  std::unique_ptr<Gpt> gpt_;
  Optimizer optimizer_;
  DeviceCollectives* coll_;     // null without NCCL (one rank, in-process)
  std::vector<int64_t> starts_;  // (L + 1) block gradient ranges
  CudaEvent grads_ready_, grads_reduced_;
  int64_t micro_ = 0;
  bool reduced_ = false;
  DeviceMemory memory_;
};

}  // namespace

Result<std::unique_ptr<Engine>> MakeCudaEngine(const RunPlan& plan, Communicator& comm) {
  if (comm.world_size() > 1 && comm.device() == nullptr) {
    return Error{"backend cuda on " + std::to_string(comm.world_size()) +
                     " ranks needs a communicator with device collectives (NCCL)",
                 "world_size"};
  }
  Result<std::unique_ptr<CudaContext>> ctx = CudaContext::Create(plan.DeviceOf(comm.rank()));
  if (!ctx.ok()) return ctx.error();
  Result<std::unique_ptr<Gpt>> gpt =
      Gpt::Create(**ctx, plan.model, plan.micro_batch, plan.model.seq_len);
  if (!gpt.ok()) return gpt.error();
  std::unique_ptr<Engine> engine(
      new CudaEngine(std::move(ctx).value(), std::move(gpt).value(), plan.optim, comm));
  return engine;
}

}  // namespace ablate::cuda
