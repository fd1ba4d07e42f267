// The seam between the training loop and a backend: one rank's model replica and optimizer.
// RankRunner drives an Engine; CpuEngine (cpu_engine.h) and the CUDA backend's engine
// (trainer/cuda/cuda_engine.h) implement it. Used from the rank's own thread only.
#ifndef ABLATE_TRAINER_TRAIN_ENGINE_H_
#define ABLATE_TRAINER_TRAIN_ENGINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/collectives/communicator.h"
#include "trainer/optim/optimizer_state.h"
#include "trainer/train/run_plan.h"

namespace ablate {

enum class Pass { kEval, kTrain };

// A GPU's memory as the `start` and `end` events report it, in bytes.
struct DeviceMemory {
  int64_t used_bytes = 0;       // in use on the device now (cudaMemGetInfo), all processes
  int64_t peak_used_bytes = 0;  // the most seen in use at any sample so far
  int64_t total_bytes = 0;
  int64_t model_bytes = 0;  // the model's own allocations (parameters, gradients, activations)
};

// What one train step left behind (Engine::CollectStep), the same on every rank.
struct StepReport {
  float loss = 0.f;          // the step's mean train loss, averaged over ranks
  bool data_failed = false;  // some rank could not read its batch this step
  bool stop = false;         // rank 0 had been asked to stop when the step ended
  bool checkpoint = false;   // rank 0 asked for a checkpoint (its clock said one is due)
  double step_ms = 0;        // BeginStep to the end of EndStep's work (device time on a GPU)
};

// A train step is queued as BeginStep, ZeroGrads, Accumulate × grad_accum, Step, EndStep, and
// read back with CollectStep. On a GPU nothing of it waits for the device (StepsInFlight 1):
// the loop queues step s + 1 before it collects step s, so the device never idles while the
// host logs. Eval passes and TakeLoss wait, at validation points only.
class Engine {
 public:
  virtual ~Engine() = default;

  // Parameters from `seed` (MODEL.md's initialisation), identical on every rank. Collective.
  virtual Status Init(uint64_t seed) = 0;
  virtual Status ZeroGrads() = 0;
  // tokens (B, T+1): adds (mean loss of the micro-batch) / divisor to the loss accumulator;
  // with Pass::kTrain also adds its gradient to the gradients. windows: LayerWindowBlocks.
  virtual Status Accumulate(const int32_t* tokens, const std::vector<int64_t>& windows,
                            int64_t divisor, Pass pass) = 0;
  // The accumulated loss since the last call (waiting for the device), then 0.
  virtual Result<float> TakeLoss() = 0;
  // Averages the gradients over ranks and applies the optimizer at 0-based `step`. Collective.
  virtual Status Step(int64_t step) = 0;
  // Starts train step `step`'s clock (on the device's timeline on a GPU).
  virtual Status BeginStep(int64_t step) = 0;
  // After Step(step): the step's report is reduced over ranks (the loss accumulator, then 0;
  // data_failed; stop and checkpoint, read on rank 0) and its clock stops. Collective; queued,
  // no wait.
  virtual Status EndStep(int64_t step, bool data_failed, bool stop, bool checkpoint) = 0;
  // Waits for step `step`'s EndStep and returns its report. Steps are collected in order, each
  // once, and at most StepsInFlight() ended steps stay uncollected when the next one begins.
  virtual Result<StepReport> CollectStep(int64_t step) = 0;
  virtual int StepsInFlight() const { return 0; }
  // Returns when all queued work is done.
  virtual Status Synchronize() = 0;
  // The parameters (ParamLayout order) to or from the host, waiting for the device; the same on
  // every rank. SetParams after Init replaces the initialisation (--init-from, --resume).
  virtual Status GetParams(std::vector<float>& host) = 0;
  virtual Status SetParams(const std::vector<float>& host) = 0;
  // The optimizers' state for a checkpoint. Collective (Muon's momenta live on their owners).
  virtual Status GetOptimizerState(OptimizerState& state) = 0;
  virtual Status SetOptimizerState(const OptimizerState& state) = 0;
  // The device's memory, sampled now (the peak covers every sample since Init); nullopt on the
  // CPU. No device synchronisation.
  virtual std::optional<DeviceMemory> Memory() { return std::nullopt; }
};

// The engine for plan.backend on comm's rank. Errors: a build without CUDA, no device, out of
// device memory.
Result<std::unique_ptr<Engine>> MakeEngine(const RunPlan& plan, Communicator& comm);

// For `start` and for validation before any work: the name of CUDA device `index`, or why it
// cannot be used (no device, no cuBLASLt to load, a build without CUDA).
Result<std::string> ProbeCudaDevice(int index);

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_ENGINE_H_
