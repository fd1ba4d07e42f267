// Muon on the device (CPU twin: trainer/optim/muon.h): momentum and Nesterov in fp32, then
// Newton–Schulz in bf16 through cuBLASLt, as the records do it. Matrices of the same shape form
// one group (tall ones transposed, so NS runs on rows <= cols) whose NS iterations run as
// strided-batched GEMMs: every (d, d) slice of every layer's merged or separate q, k, v and
// attention projection in one batch, the MLP's fc matrices in another, its projections in a
// third. One GPU: no all-gather
// (the distributed split comes with NCCL).
#ifndef ABLATE_TRAINER_CUDA_MUON_H_
#define ABLATE_TRAINER_CUDA_MUON_H_

#include <cstdint>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/dtype.h"
#include "trainer/optim/muon.h"

namespace ablate::cuda {

class Muon {
 public:
  // matrices: offsets into the device buffers (DeviceLayout).
  Muon(MuonConfig config, std::vector<MuonMatrix> matrices);

  // Allocates (and zeroes) the momentum buffers and each group's NS work buffers.
  Status Init(CudaContext& ctx);
  // params -= lr·lr_mult·scale·NS(momentum(grads)) for every matrix, on ctx's stream.
  Status Step(CudaContext& ctx, float* params, const float* grads, double lr_mult, int64_t step);

 private:
  // Matrices of one shape; NS runs on (r, c) = (min, max) of it, transposed when rows > cols.
  struct Group {
    int64_t r = 0, c = 0;
    bool transposed = false;
    std::vector<int64_t> members;  // indices into matrices_
    DeviceBuffer<float> staging;   // (G, rows·cols) momentum output, the matrix's own layout
    DeviceBuffer<float> inv_norm;  // (G)
    DeviceBuffer<bf16> x, x_next;  // (G, r, c)
    DeviceBuffer<bf16> a, b;       // (G, r, r)
  };

  Status NewtonSchulz(CudaContext& ctx, Group& g);

  MuonConfig config_;
  std::vector<MuonMatrix> matrices_;
  std::vector<int64_t> momentum_offsets_;  // per matrix, into momentum_
  DeviceBuffer<float> momentum_;
  std::vector<Group> groups_;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_MUON_H_
