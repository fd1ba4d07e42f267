// An owning handle to a CUDA event without timing (cudaEventDisableTiming), for ordering one
// stream after another: Record on the producer, WaitOn from the consumer. Re-recording is safe
// once the wait is queued (the wait captures the event's state when it is queued).
#ifndef ABLATE_TRAINER_CUDA_CUDA_EVENT_H_
#define ABLATE_TRAINER_CUDA_CUDA_EVENT_H_

#include <cuda_runtime_api.h>

#include <utility>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_check.h"

namespace ablate::cuda {

class CudaEvent {
 public:
  CudaEvent() = default;
  ~CudaEvent() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  // On the calling thread's current device.
  Status Create() {
    ABLATE_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    return {};
  }
  // consumer waits (on the device) for what `producer` had queued before this call.
  Status Order(cudaStream_t producer, cudaStream_t consumer) {
    ABLATE_CUDA_CHECK(cudaEventRecord(event_, producer));
    ABLATE_CUDA_CHECK(cudaStreamWaitEvent(consumer, event_, 0));
    return {};
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_CUDA_EVENT_H_
