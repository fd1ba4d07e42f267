// CudaEngine: parameters are initialised on the host with the CPU's InitParams (same values for
// the same seed on both backends and on every rank), uploaded once, and from then on live on
// the device. On several ranks the gradient all-reduce runs on the communicator's stream: on the
// step's last micro-batch each block's gradients are reduced as soon as its backward is queued,
// the embeddings, head and global scalars after the whole backward; the optimizer's stream
// waits for the last of them (events, no host wait).
//
// A step's report (loss, data failure, stop, checkpoint) goes into a 4-float device vector, is
// averaged over ranks on the communication stream, and comes back through pinned memory; its
// clock is a pair of timing events on the compute stream. Two report slots alternate, so step
// s + 1 is queued while step s is still running. Nothing in a step waits on the host except the
// staging of a micro-batch two ahead of the device (gpt.cc).
#include "trainer/cuda/cuda_engine.h"

#include <algorithm>
#include <vector>

#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/cuda_event.h"
#include "trainer/cuda/gpt.h"
#include "trainer/cuda/optimizer.h"
#include "trainer/model/bf16.h"
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
        starts_(gpt_->device_layout().BlockStarts(gpt_->config().n_layer)),
        comm_(comm),
        rank_(comm.rank()) {}

  Status Init(uint64_t seed) override {
    std::vector<float> host(size_t(gpt_->layout().total()));
    InitParams(gpt_->config(), gpt_->layout(), seed, host.data());
    RoundStoredParams(gpt_->layout(), host.data());  // the records cast after init
    ABLATE_RETURN_IF_ERROR(gpt_->SetParams(host.data()));
    if (coll_ != nullptr) {
      ABLATE_RETURN_IF_ERROR(grads_ready_.Create());
      ABLATE_RETURN_IF_ERROR(grads_reduced_.Create());
      ctx_->SetHealthCheck([coll = coll_] { return coll->Health(); });
    }
    for (Slot& slot : slots_) {
      ABLATE_RETURN_IF_ERROR(slot.begin.Create(/*timing=*/true));
      ABLATE_RETURN_IF_ERROR(slot.end.Create(/*timing=*/true));
    }
    ABLATE_RETURN_IF_ERROR(report_dev_.Allocate(2 * kReport, "the step reports"));
    ABLATE_RETURN_IF_ERROR(report_in_.Allocate(2 * kReport, "the step reports"));
    ABLATE_RETURN_IF_ERROR(report_out_.Allocate(2 * kReport, "the step reports"));
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

  Status BeginStep(int64_t step) override {
    Slot& slot = slots_[step % 2];
    if (slot.step >= 0) {
      return Error{"step " + std::to_string(step) + " began before step " +
                       std::to_string(slot.step) + " was collected",
                   ""};
    }
    return slot.begin.Record(ctx_->stream());
  }

  Status EndStep(int64_t step, bool data_failed, bool stop, bool checkpoint) override {
    int64_t k = step % 2;
    Slot& slot = slots_[k];
    float* dev = report_dev_.get() + kReport * k;
    float* in = report_in_.get() + kReport * k;  // free: its last copy was collected
    in[0] = data_failed ? 1.f : 0.f;
    in[1] = rank_ == 0 && stop ? 1.f : 0.f;
    in[2] = rank_ == 0 && checkpoint ? 1.f : 0.f;
    ABLATE_RETURN_IF_ERROR(gpt_->MoveLoss(dev));
    ABLATE_CUDA_CHECK(cudaMemcpyAsync(dev + 1, in, (kReport - 1) * sizeof(float),
                                      cudaMemcpyHostToDevice, ctx_->stream()));
    if (coll_ != nullptr) {
      ABLATE_RETURN_IF_ERROR(grads_ready_.Order(ctx_->stream(), CommStream()));
      ABLATE_RETURN_IF_ERROR(coll_->AllReduce(dev, kReport, WireType::kF32, ReduceOp::kAvg));
      ABLATE_RETURN_IF_ERROR(grads_reduced_.Order(CommStream(), ctx_->stream()));
    }
    ABLATE_CUDA_CHECK(cudaMemcpyAsync(report_out_.get() + kReport * k, dev,
                                      kReport * sizeof(float), cudaMemcpyDeviceToHost,
                                      ctx_->stream()));
    ABLATE_RETURN_IF_ERROR(slot.end.Record(ctx_->stream()));
    slot.step = step;
    return {};
  }

  Result<StepReport> CollectStep(int64_t step) override {
    Slot& slot = slots_[step % 2];
    if (slot.step != step) {
      return Error{"CollectStep(" + std::to_string(step) + ") without its EndStep", ""};
    }
    ABLATE_RETURN_IF_ERROR(ctx_->Wait(slot.end));
    Result<float> ms = slot.end.ElapsedMsSince(slot.begin);
    if (!ms.ok()) return ms.error();
    const float* out = report_out_.get() + kReport * (step % 2);
    slot.step = -1;
    return StepReport{out[0], out[1] > 0, out[2] > 0, out[3] > 0, double(*ms)};
  }

  int StepsInFlight() const override { return 1; }

  Status Synchronize() override { return ctx_->Synchronize(); }

  Status GetParams(std::vector<float>& host) override {
    host.assign(size_t(gpt_->layout().total()), 0.f);
    ABLATE_RETURN_IF_ERROR(ctx_->Synchronize());
    return gpt_->GetParams(host.data());
  }

  Status SetParams(const std::vector<float>& host) override {
    if (int64_t(host.size()) != gpt_->layout().total()) {
      return Error{"SetParams: " + std::to_string(host.size()) + " values for " +
                       std::to_string(gpt_->layout().total()) + " parameters",
                   ""};
    }
    ABLATE_RETURN_IF_ERROR(ctx_->Synchronize());
    return gpt_->SetParams(host.data());
  }

  Status GetOptimizerState(OptimizerState& state) override {
    return optimizer_.GetState(*ctx_, state, comm_);
  }

  Status SetOptimizerState(const OptimizerState& state) override {
    return optimizer_.SetState(*ctx_, state);
  }

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
  DeviceCollectives* coll_;      // null without NCCL (one rank, in-process)
  std::vector<int64_t> starts_;  // (L + 1) block gradient ranges
  CudaEvent grads_ready_, grads_reduced_;
  // A step in flight: its clock and the step it belongs to (-1: free).
  struct Slot {
    CudaEvent begin, end;
    int64_t step = -1;
  };
  Slot slots_[2];
  Communicator& comm_;  // host collectives (checkpoint state)
  int rank_;
  static constexpr int64_t kReport = 4;  // loss, data failure, stop, checkpoint
  DeviceBuffer<float> report_dev_;  // (2 × kReport)
  PinnedBuffer<float> report_in_;   // (2 × kReport) the host's flags, [1..3] of each slot
  PinnedBuffer<float> report_out_;  // (2 × kReport) the reduced reports
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
  Result<std::unique_ptr<CudaContext>> ctx = CudaContext::Create(
      plan.DeviceOf(comm.rank()), plan.abort != nullptr ? plan.abort->flag() : nullptr);
  if (!ctx.ok()) return ctx.error();
  Result<std::unique_ptr<Gpt>> gpt =
      Gpt::Create(**ctx, plan.model, plan.micro_batch, plan.model.seq_len);
  if (!gpt.ok()) return gpt.error();
  (*gpt)->set_attention(plan.attention);
  std::unique_ptr<Engine> engine(
      new CudaEngine(std::move(ctx).value(), std::move(gpt).value(), plan.optim, comm));
  return engine;
}

}  // namespace ablate::cuda
