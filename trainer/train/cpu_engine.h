// The CPU backend behind Engine: Gpt<float>, the recipes' Optimizer and the communicator's
// collectives, exactly as the training loop used them before the seam existed.
#ifndef ABLATE_TRAINER_TRAIN_CPU_ENGINE_H_
#define ABLATE_TRAINER_TRAIN_CPU_ENGINE_H_

#include <chrono>

#include "trainer/model/gpt.h"
#include "trainer/optim/optimizer.h"
#include "trainer/train/engine.h"

namespace ablate {

class CpuEngine : public Engine {
 public:
  CpuEngine(const RunPlan& plan, Communicator& comm);

  Status Init(uint64_t seed) override;
  Status ZeroGrads() override;
  Status Accumulate(const int32_t* tokens, const std::vector<int64_t>& windows, int64_t divisor,
                    Pass pass) override;
  Result<float> TakeLoss() override;
  Status Step(int64_t step) override;
  Status BeginStep(int64_t step) override;
  Status EndStep(int64_t step, bool data_failed, bool stop, bool checkpoint) override;
  Result<StepReport> CollectStep(int64_t step) override;
  Status Synchronize() override { return {}; }
  Status GetParams(std::vector<float>& host) override;
  Status SetParams(const std::vector<float>& host) override;
  Status GetOptimizerState(OptimizerState& state) override;
  Status SetOptimizerState(const OptimizerState& state) override;

 private:
  const RunPlan& plan_;
  Communicator& comm_;
  Gpt<float> gpt_;
  Optimizer optimizer_;
  double loss_ = 0.0;  // Σ mean loss / divisor over the step's micro-steps, in double (as CUDA)
  std::chrono::steady_clock::time_point step_start_;
  // Two ended steps may await collection (a pipelined loop): slot step % 2.
  struct Ended {
    int64_t step = -1;  // -1: free
    StepReport report;
  };
  Ended ended_[2];
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_CPU_ENGINE_H_
