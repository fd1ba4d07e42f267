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
#include "trainer/dist/communicator.h"
#include "trainer/train/run_plan.h"

namespace ablate {

enum class Pass { kEval, kTrain };

// A GPU's memory as the `start` and `end` events report it, in bytes.
struct DeviceMemory {
  int64_t used_bytes = 0;       // in use on the device now (cudaMemGetInfo), all processes
  int64_t peak_used_bytes = 0;  // the most seen in use at any sample so far
  int64_t total_bytes = 0;
  int64_t model_bytes = 0;      // the model's own allocations (parameters, gradients, activations)
};

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
  // Returns when all queued work is done, so a step's wall time is its device time.
  virtual Status Synchronize() = 0;
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
