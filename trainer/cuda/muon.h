// Muon on the device (CPU twin: trainer/optim/muon.h): momentum and Nesterov in fp32, then
// Newton–Schulz in bf16 through cuBLASLt, as the records do it. Matrices of the same shape form
// one group (tall ones transposed, so NS runs on rows <= cols) whose NS iterations run as
// strided-batched GEMMs: every (d, d) slice of every layer's merged or separate q, k, v and
// attention projection in one batch, the MLP's fc matrices in another, its projections in a
// third. On several GPUs the matrices are dealt out as the CPU twin deals them
// (MuonGatherLayout): each rank runs momentum and NS for its own matrices only, packs its bf16
// NS outputs into its part of one buffer, and one all-gather on the communication stream hands
// every rank every update; Adam runs on the compute stream meanwhile (Launch, then Finish).
#ifndef ABLATE_TRAINER_CUDA_MUON_H_
#define ABLATE_TRAINER_CUDA_MUON_H_

#include <cstdint>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/cuda_event.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/collectives/communicator.h"
#include "trainer/cuda/dtype.h"
#include "trainer/optim/muon.h"

namespace ablate::cuda {

class Muon {
 public:
  // matrices: offsets into the device buffers (DeviceLayout). This rank keeps momentum and NS
  // buffers only for the matrices it owns (index % world == rank).
  Muon(MuonConfig config, std::vector<MuonMatrix> matrices, int rank = 0, int world = 1);

  // Allocates (and zeroes) the momentum buffers, each group's NS work buffers and, on several
  // ranks, the gather buffers and events.
  Status Init(CudaContext& ctx);
  // params -= lr·lr_mult·scale·NS(momentum(grads)) for every matrix, on ctx's stream. grads must
  // be the mean over ranks. One rank: the whole update. Several: this rank's share, then the
  // all-gather queued on coll's stream (coll required); Finish applies the gathered updates.
  Status Launch(CudaContext& ctx, float* params, const float* grads, double lr_mult,
                int64_t step, DeviceCollectives* coll);
  // Several ranks: ctx's stream waits for the gather, then every matrix's update is applied.
  // No-op on one rank. Collective order: every rank calls Launch, then Finish.
  Status Finish(CudaContext& ctx, float* params, DeviceCollectives* coll);
  // Checkpoints (the CPU twin's layout: every matrix's momentum in matrix order). GetState
  // returns this rank's matrices' and zeros elsewhere (the caller sums over ranks); SetState
  // keeps this rank's. Wait for ctx.
  Status GetState(CudaContext& ctx, std::vector<float>& momentum);
  Status SetState(CudaContext& ctx, const std::vector<float>& momentum);
  int64_t StateSize() const;
  // Both, for callers with nothing to overlap.
  Status Step(CudaContext& ctx, float* params, const float* grads, double lr_mult, int64_t step,
              DeviceCollectives* coll = nullptr) {
    ABLATE_RETURN_IF_ERROR(Launch(ctx, params, grads, lr_mult, step, coll));
    return Finish(ctx, params, coll);
  }

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
  // Momentum, norms, packing and NS of group g (its members are this rank's matrices).
  Status Orthogonalise(CudaContext& ctx, Group& g, const float* grads, double mu);
  float Scale(const MuonMatrix& m) const;

  MuonConfig config_;
  std::vector<MuonMatrix> matrices_;
  int rank_, world_;
  MuonGatherLayout gather_;
  std::vector<int64_t> momentum_offsets_;  // per matrix, into momentum_; -1 when not owned
  DeviceBuffer<float> momentum_;
  std::vector<Group> groups_;
  double lr_ = 0;                          // of the step in flight (Launch → Finish)
  DeviceBuffer<bf16> mine_, all_;          // (gather_.width), (world, gather_.width)
  CudaEvent packed_, gathered_;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_MUON_H_
