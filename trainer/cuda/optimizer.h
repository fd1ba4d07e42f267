// The recipes' optimizer split on the device (CPU twin: trainer/optim/optimizer.h): Muon for the
// hidden matrices, Adam for embeddings, head and scalars, one schedule for all. On several GPUs
// Muon is distributed (muon.h) and Adam runs, replicated, while Muon's all-gather is in flight.
#ifndef ABLATE_TRAINER_CUDA_OPTIMIZER_H_
#define ABLATE_TRAINER_CUDA_OPTIMIZER_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cuda/adam.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/device_layout.h"
#include "trainer/cuda/muon.h"
#include "trainer/optim/optimizer.h"

namespace ablate::cuda {

class Optimizer {
 public:
  Optimizer(const OptimConfig& config, const DeviceLayout& layout, int rank = 0, int world = 1);

  // Allocates the optimizer state on ctx's device.
  Status Init(CudaContext& ctx);
  // One step of every group at 0-based `step`: params, grads in the device layout; grads must
  // be the mean over micro-steps and ranks. Queued on ctx's stream (and, on several ranks, coll's
  // stream, which is then required). Collective on several ranks.
  Status Step(CudaContext& ctx, float* params, const float* grads, int64_t step,
              DeviceCollectives* coll = nullptr);

  // Checkpoints, in the CPU twin's OptimizerState layout (so either backend resumes the other's).
  // Wait for ctx. GetState is collective: the Muon momenta are summed over comm's ranks.
  Status GetState(CudaContext& ctx, OptimizerState& state, Communicator& comm);
  Status SetState(CudaContext& ctx, const OptimizerState& state);

  double LrMultiplier(int64_t step) const { return config_.schedule.Multiplier(step); }
  double Momentum(int64_t step) const { return config_.muon.momentum.At(step); }

 private:
  OptimConfig config_;
  Muon muon_;
  Adam adam_;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_OPTIMIZER_H_
