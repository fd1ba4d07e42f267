// An owning handle to a CUDA event. Without timing (the default) it orders one stream after
// another: Order records on the producer and queues the consumer's wait. With timing it marks
// points of a stream whose device time ElapsedMs measures. Re-recording is safe once the waits
// on the previous record are queued (a wait captures the event's state when it is queued).
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
  Status Create(bool timing = false) {
    ABLATE_CUDA_CHECK(
        cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
    return {};
  }
  cudaEvent_t get() const { return event_; }
  Status Record(cudaStream_t stream) {
    ABLATE_CUDA_CHECK(cudaEventRecord(event_, stream));
    return {};
  }
  // consumer waits (on the device) for what `producer` had queued before this call.
  Status Order(cudaStream_t producer, cudaStream_t consumer) {
    ABLATE_RETURN_IF_ERROR(Record(producer));
    ABLATE_CUDA_CHECK(cudaStreamWaitEvent(consumer, event_, 0));
    return {};
  }
  // Device milliseconds from `start`'s record to this one's; both timing events, completed.
  Result<float> ElapsedMsSince(const CudaEvent& start) const {
    float ms = 0.f;
    ABLATE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_CUDA_EVENT_H_
