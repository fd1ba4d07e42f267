// CpuEngine. The reported loss is summed in double (each micro-step's mean, cpu::mean_loss, over
// its divisor), as the CUDA engine sums it; training does not depend on it.
#include "trainer/train/cpu_engine.h"

#include <algorithm>

#include "trainer/cpu/parallel.h"
#include "trainer/model/bf16.h"
#include "trainer/model/param_init.h"

namespace ablate {

CpuEngine::CpuEngine(const RunPlan& plan, Communicator& comm)
    : plan_(plan),
      comm_(comm),
      gpt_(plan.model, plan.micro_batch, plan.model.seq_len),
      optimizer_(plan.optim, gpt_.layout(), comm.rank(), comm.world_size()) {}

Status CpuEngine::Init(uint64_t seed) {
  cpu::SetThreads(plan_.threads_per_rank);
  if (comm_.rank() == 0) {
    InitParams(plan_.model, gpt_.layout(), seed, gpt_.params().data());
    RoundStoredParams(gpt_.layout(), gpt_.params().data());  // the records cast after init
  }
  return comm_.Broadcast(gpt_.params(), 0);
}

Status CpuEngine::ZeroGrads() {
  std::fill(gpt_.grads().begin(), gpt_.grads().end(), 0.f);
  return {};
}

Status CpuEngine::Accumulate(const int32_t* tokens, const std::vector<int64_t>& windows,
                             int64_t divisor, Pass pass) {
  loss_ += double(gpt_.Forward(tokens, windows)) / double(divisor);
  if (pass == Pass::kTrain) gpt_.Backward(1.f / float(divisor));
  return {};
}

Result<float> CpuEngine::TakeLoss() {
  float loss = float(loss_);
  loss_ = 0.0;
  return loss;
}

Status CpuEngine::Step(int64_t step) {
  Status s = comm_.AllReduce(gpt_.grads(), ReduceOp::kAvg);
  if (!s.ok()) return s;
  return optimizer_.Step(gpt_.params().data(), gpt_.grads().data(), step, comm_);
}

Status CpuEngine::BeginStep(int64_t step) {
  if (int64_t waiting = ended_[step % 2].step; waiting >= 0) {
    return Error{"step " + std::to_string(step) + " began before step " + std::to_string(waiting) +
                     " was collected",
                 ""};
  }
  step_start_ = std::chrono::steady_clock::now();
  return {};
}

// The stats all-reduce is the loop's former one (loss, failure flag), averaged, so CPU runs stay
// bit-identical; the stop flag rides along.
Status CpuEngine::EndStep(int64_t step, bool data_failed, bool stop, bool checkpoint) {
  std::vector<float> stats = {TakeLoss().value(), data_failed ? 1.f : 0.f,
                              comm_.rank() == 0 && stop ? 1.f : 0.f,
                              comm_.rank() == 0 && checkpoint ? 1.f : 0.f};
  Status s = comm_.AllReduce(stats, ReduceOp::kAvg);
  if (!s.ok()) return s;
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start_)
          .count();
  ended_[step % 2] = {step, {stats[0], stats[1] > 0, stats[2] > 0, stats[3] > 0, ms}};
  return {};
}

Result<StepReport> CpuEngine::CollectStep(int64_t step) {
  Ended& e = ended_[step % 2];
  if (e.step != step) {
    return Error{"CollectStep(" + std::to_string(step) + ") without its EndStep", ""};
  }
  e.step = -1;
  return e.report;
}

Status CpuEngine::GetParams(std::vector<float>& host) {
  host = gpt_.params();
  return {};
}

Status CpuEngine::SetParams(const std::vector<float>& host) {
  if (host.size() != gpt_.params().size()) {
    return Error{"SetParams: " + std::to_string(host.size()) + " values for " +
                     std::to_string(gpt_.params().size()) + " parameters",
                 ""};
  }
  gpt_.params() = host;
  return {};
}

Status CpuEngine::GetOptimizerState(OptimizerState& state) {
  return optimizer_.GetState(state, comm_);
}

Status CpuEngine::SetOptimizerState(const OptimizerState& state) {
  return optimizer_.SetState(state);
}

}  // namespace ablate
