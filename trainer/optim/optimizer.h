// The recipes' optimizer split (MODEL.md table): Muon for hidden matrices, Adam for embeddings,
// head and scalars, one schedule for all. Built from a canonical config and the param layout.
#ifndef ABLATE_TRAINER_OPTIM_OPTIMIZER_H_
#define ABLATE_TRAINER_OPTIM_OPTIMIZER_H_

#include <memory>
#include <nlohmann/json.hpp>

#include "trainer/config/result.h"
#include "trainer/collectives/communicator.h"
#include "trainer/model/param_layout.h"
#include "trainer/optim/adam.h"
#include "trainer/optim/lr_schedule.h"
#include "trainer/optim/muon.h"
#include "trainer/optim/optimizer_state.h"

namespace ablate {

struct OptimConfig {
  MuonConfig muon;
  AdamConfig adam;
  double embed_lr = 0.3, head_lr = 0.002, scalar_lr = 0.02;
  LrSchedule schedule;

  static Result<OptimConfig> FromCanonical(const nlohmann::json& canonical);
  double BaseLr(ParamGroup group) const;
};

class Optimizer {
 public:
  Optimizer(const OptimConfig& config, const ParamLayout& layout, int rank, int world);

  // One step of every group at 0-based `step`. grads must be the mean over micro-steps and
  // ranks. Collective (Muon all-gathers).
  Status Step(float* params, const float* grads, int64_t step, Communicator& comm);

  // Checkpoints. GetState is collective (see Muon::GetState). SetState fails, naming the part,
  // when the sizes do not match this optimizer's.
  Status GetState(OptimizerState& state, Communicator& comm) const;
  Status SetState(const OptimizerState& state);

  double LrMultiplier(int64_t step) const { return config_.schedule.Multiplier(step); }
  double Momentum(int64_t step) const { return config_.muon.momentum.At(step); }

  // [{"name", "shape", "group", "lr"}] for the start event.
  static nlohmann::json GroupTable(const OptimConfig& config, const ParamLayout& layout);

 private:
  OptimConfig config_;
  Muon muon_;
  Adam adam_;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_OPTIM_OPTIMIZER_H_
