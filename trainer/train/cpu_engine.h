// The CPU backend behind Engine: Gpt<float>, the recipes' Optimizer and the communicator's
// collectives, exactly as the training loop used them before the seam existed.
#ifndef ABLATE_TRAINER_TRAIN_CPU_ENGINE_H_
#define ABLATE_TRAINER_TRAIN_CPU_ENGINE_H_

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
  Status Synchronize() override { return {}; }

 private:
  const RunPlan& plan_;
  Communicator& comm_;
  Gpt<float> gpt_;
  Optimizer optimizer_;
  float loss_ = 0.f;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_CPU_ENGINE_H_
