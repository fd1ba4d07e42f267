// Group assignment in the device layout (the CPU's optimizer.cc does the same in its own).
#include "trainer/cuda/optimizer.h"

#include <vector>

namespace ablate::cuda {
namespace {

// Every Muon matrix, merged qkv as its 3 slices, at device offsets.
std::vector<MuonMatrix> DeviceMuonMatrices(const DeviceLayout& layout) {
  std::vector<MuonMatrix> out;
  for (const ParamInfo& p : layout.host().params()) {
    if (p.group != ParamGroup::kMuon) continue;
    int64_t rows = p.shape[p.shape.size() - 2], cols = p.shape.back();
    int64_t slices = p.numel / (rows * cols);
    for (int64_t s = 0; s < slices; ++s) {
      out.push_back({layout.Map(p.offset) + s * rows * cols, rows, cols});
    }
  }
  return out;
}

std::vector<AdamSpan> DeviceAdamSpans(const OptimConfig& c, const DeviceLayout& layout) {
  std::vector<AdamSpan> out;
  for (const ParamInfo& p : layout.host().params()) {
    if (p.group != ParamGroup::kMuon)
      out.push_back({layout.Map(p.offset), p.numel, c.BaseLr(p.group), p.bf16});
  }
  return out;
}

}  // namespace

Optimizer::Optimizer(const OptimConfig& config, const DeviceLayout& layout, int rank, int world)
    : config_(config),
      muon_(config.muon, DeviceMuonMatrices(layout), rank, world),
      adam_(config.adam, DeviceAdamSpans(config, layout)) {}

Status Optimizer::Init(CudaContext& ctx) {
  ABLATE_RETURN_IF_ERROR(muon_.Init(ctx));
  return adam_.Init(ctx);
}

Status Optimizer::Step(CudaContext& ctx, float* params, const float* grads, int64_t step,
                       DeviceCollectives* coll) {
  double mult = LrMultiplier(step);
  // Muon first: on several ranks its all-gather then overlaps Adam. The two touch disjoint
  // parameters, so the order does not change the result.
  ABLATE_RETURN_IF_ERROR(muon_.Launch(ctx, params, grads, mult, step, coll));
  ABLATE_RETURN_IF_ERROR(adam_.Step(ctx, params, grads, mult));
  return muon_.Finish(ctx, params, coll);
}

Status Optimizer::GetState(CudaContext& ctx, OptimizerState& state, Communicator& comm) {
  ABLATE_RETURN_IF_ERROR(ctx.Synchronize());
  ABLATE_RETURN_IF_ERROR(adam_.GetState(ctx, state.adam_steps, state.adam_m, state.adam_v));
  ABLATE_RETURN_IF_ERROR(muon_.GetState(ctx, state.muon_momentum));
  if (comm.world_size() == 1) return {};
  return comm.AllReduce(state.muon_momentum, ReduceOp::kSum);
}

Status Optimizer::SetState(CudaContext& ctx, const OptimizerState& state) {
  ABLATE_RETURN_IF_ERROR(CheckStateSizes(state, adam_.StateSize(), muon_.StateSize()));
  ABLATE_RETURN_IF_ERROR(ctx.Synchronize());
  ABLATE_RETURN_IF_ERROR(adam_.SetState(ctx, state.adam_steps, state.adam_m, state.adam_v));
  return muon_.SetState(ctx, state.muon_momentum);
}

}  // namespace ablate::cuda
