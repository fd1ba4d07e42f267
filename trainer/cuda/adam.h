// Adam on the device, torch.optim.Adam semantics as the CPU twin (trainer/optim/adam.h): one
// fused kernel per span reads p, g, m, v and writes p, m, v (fp32 master weights and state;
// a span stored in bf16 keeps m and v in bf16 and its weights rounded to bf16).
// The per-step constants are computed on the host exactly as the CPU computes them.
#ifndef ABLATE_TRAINER_CUDA_ADAM_H_
#define ABLATE_TRAINER_CUDA_ADAM_H_

#include <cstdint>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/dtype.h"
#include "trainer/optim/adam.h"

namespace ablate::cuda {

class Adam {
 public:
  // spans: offsets into the device buffers (DeviceLayout), each with its base lr.
  Adam(AdamConfig config, std::vector<AdamSpan> spans);

  // Allocates and zeroes m and v.
  Status Init(CudaContext& ctx);
  // One step (t = number of calls so far + 1) with lr = span.lr × lr_mult, on ctx's stream.
  Status Step(CudaContext& ctx, float* params, const float* grads, double lr_mult);
  // Checkpoints (the CPU twin's GetState/SetState layout: t, moments concatenated in span
  // order, as fp32; bf16 spans widen exactly and are rounded back on SetState). Wait for ctx.
  Status GetState(CudaContext& ctx, int64_t& steps, std::vector<float>& m, std::vector<float>& v);
  Status SetState(CudaContext& ctx, int64_t steps, const std::vector<float>& m,
                  const std::vector<float>& v);
  int64_t StateSize() const;

 private:
  AdamConfig config_;
  std::vector<AdamSpan> spans_;
  std::vector<int64_t> state_offsets_;  // per span, into m_ and v_ (m16_ and v16_ when bf16)
  DeviceBuffer<float> m_, v_;
  DeviceBuffer<bf16> m16_, v16_;  // the moments of the spans stored in bf16
  int64_t t_ = 0;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_ADAM_H_
