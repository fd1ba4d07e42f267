// The CUDA backend behind the training loop's Engine (trainer/train/engine.h): one GPU with its
// context, model and optimizer. Created on the rank's thread, which then drives it alone.
#ifndef ABLATE_TRAINER_CUDA_CUDA_ENGINE_H_
#define ABLATE_TRAINER_CUDA_CUDA_ENGINE_H_

#include <memory>

#include "trainer/config/result.h"
#include "trainer/collectives/communicator.h"
#include "trainer/train/engine.h"
#include "trainer/train/run_plan.h"

namespace ablate::cuda {

// An engine on device plan.DeviceOf(comm.rank()). Errors: several ranks without device
// collectives (a CPU communicator), no such
// device, cuBLASLt missing, out of device memory (naming the tensor).
Result<std::unique_ptr<Engine>> MakeCudaEngine(const RunPlan& plan, Communicator& comm);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_CUDA_ENGINE_H_
