// Device Muon, host side: grouping, state, and the per-step sequence of kernels and batched
// GEMMs for each group.
#include "trainer/cuda/muon.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/optim_kernels.h"

namespace ablate::cuda {

Muon::Muon(MuonConfig config, std::vector<MuonMatrix> matrices, int rank, int world)
    : config_(config), matrices_(std::move(matrices)), rank_(rank), world_(world),
      gather_(MuonGatherLayout::Make(matrices_, world)) {
  // (rows, cols) → group index: equal shapes share an orientation, so a group is one batch.
  std::map<std::pair<int64_t, int64_t>, size_t> group_of;
  int64_t total = 0;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    const MuonMatrix& m = matrices_[i];
    if (gather_.Owner(int64_t(i)) != rank_) {
      momentum_offsets_.push_back(-1);
      continue;
    }
    momentum_offsets_.push_back(total);
    total += m.rows * m.cols;
    auto it = group_of.find({m.rows, m.cols});
    if (it == group_of.end()) {
      it = group_of.emplace(std::make_pair(m.rows, m.cols), groups_.size()).first;
      groups_.emplace_back();
      groups_.back().r = std::min(m.rows, m.cols);
      groups_.back().c = std::max(m.rows, m.cols);
      groups_.back().transposed = m.rows > m.cols;
    }
    groups_[it->second].members.push_back(int64_t(i));
  }
}

Status Muon::Init(CudaContext& ctx) {
  int64_t total = 0;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    if (momentum_offsets_[i] >= 0) total += matrices_[i].rows * matrices_[i].cols;
  }
  ABLATE_RETURN_IF_ERROR(momentum_.Allocate(total, "Muon's momentum"));
  if (total > 0) {
    ABLATE_CUDA_CHECK(cudaMemsetAsync(momentum_.get(), 0, size_t(momentum_.bytes()), ctx.stream()));
  }
  for (Group& g : groups_) {
    int64_t count = int64_t(g.members.size()), per = g.r * g.c;
    std::string shape = std::to_string(g.r) + "x" + std::to_string(g.c);
    ABLATE_RETURN_IF_ERROR(g.staging.Allocate(count * per, "Muon staging " + shape));
    ABLATE_RETURN_IF_ERROR(g.inv_norm.Allocate(count, "Muon norms " + shape));
    ABLATE_RETURN_IF_ERROR(g.x.Allocate(count * per, "Muon iterate " + shape));
    ABLATE_RETURN_IF_ERROR(g.x_next.Allocate(count * per, "Muon iterate " + shape));
    ABLATE_RETURN_IF_ERROR(g.a.Allocate(count * g.r * g.r, "Muon Gram " + shape));
    ABLATE_RETURN_IF_ERROR(g.b.Allocate(count * g.r * g.r, "Muon polynomial " + shape));
  }
  if (world_ > 1) {
    ABLATE_RETURN_IF_ERROR(mine_.Allocate(gather_.width, "Muon's gather part"));
    ABLATE_RETURN_IF_ERROR(all_.Allocate(gather_.width * world_, "Muon's gathered updates"));
    ABLATE_RETURN_IF_ERROR(packed_.Create());
    ABLATE_RETURN_IF_ERROR(gathered_.Create());
  }
  return {};
}

// g.x ← the quintic iteration, batched over the group: A = X Xᵀ; B = c·A·A + b·A;
// X ← B·X + a·X (bf16 storage, fp32 accumulation; the records' X = aX + BX).
Status Muon::NewtonSchulz(CudaContext& ctx, Group& g) {
  int count = int(g.members.size());
  int64_t r = g.r, c = g.c;
  float ka = float(config_.ns_coeffs[0]), kb = float(config_.ns_coeffs[1]),
        kc = float(config_.ns_coeffs[2]);
  GemmBatch gram{count, r * c, r * c, r * r};
  GemmBatch poly{count, r * r, r * r, r * r};
  GemmBatch next{count, r * r, r * c, r * c};
  for (int s = 0; s < config_.ns_steps; ++s) {
    ABLATE_RETURN_IF_ERROR(Gemm<bf16>(ctx, Trans::kNo, Trans::kYes, r, r, c, 1.f, g.x.get(), c,
                                      g.x.get(), c, 0.f, nullptr, g.a.get(), r, gram));
    ABLATE_RETURN_IF_ERROR(Gemm<bf16>(ctx, Trans::kNo, Trans::kNo, r, r, r, kc, g.a.get(), r,
                                      g.a.get(), r, kb, g.a.get(), g.b.get(), r, poly));
    ABLATE_RETURN_IF_ERROR(Gemm<bf16>(ctx, Trans::kNo, Trans::kNo, r, c, r, 1.f, g.b.get(), r,
                                      g.x.get(), c, ka, g.x.get(), g.x_next.get(), c, next));
    std::swap(g.x, g.x_next);
  }
  return {};
}

float Muon::Scale(const MuonMatrix& m) const {
  return float(lr_ * MuonScale(config_.scale_rule, m.rows, m.cols));
}

Status Muon::Orthogonalise(CudaContext& ctx, Group& g, const float* grads, double mu) {
  int64_t count = int64_t(g.members.size()), per = g.r * g.c;
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = g.members[j];
    ABLATE_RETURN_IF_ERROR(muon_momentum(ctx, momentum_.get() + momentum_offsets_[index],
                                         grads + matrices_[index].offset,
                                         g.staging.get() + j * per, per, mu, config_.nesterov,
                                         config_.momentum_form == MomentumForm::kLerp));
  }
  ABLATE_RETURN_IF_ERROR(muon_inv_norm(ctx, g.inv_norm.get(), g.staging.get(), count, per));
  ABLATE_RETURN_IF_ERROR(
      muon_pack(ctx, g.x.get(), g.staging.get(), g.inv_norm.get(), count, g.r, g.c, g.transposed));
  return NewtonSchulz(ctx, g);
}

Status Muon::Launch(CudaContext& ctx, float* params, const float* grads, double lr_mult,
                    int64_t step, DeviceCollectives* coll) {
  lr_ = config_.lr * lr_mult;
  double mu = config_.momentum.At(step);
  if (world_ > 1 && coll == nullptr) {
    return Error{"Muon on " + std::to_string(world_) + " ranks needs device collectives", ""};
  }
  for (Group& g : groups_) {
    if (g.members.empty()) continue;
    ABLATE_RETURN_IF_ERROR(Orthogonalise(ctx, g, grads, mu));
    int64_t per = g.r * g.c;
    for (size_t j = 0; j < g.members.size(); ++j) {
      const MuonMatrix& m = matrices_[g.members[j]];
      const bf16* x = g.x.get() + int64_t(j) * per;
      if (world_ == 1) {
        ABLATE_RETURN_IF_ERROR(
            muon_apply(ctx, params + m.offset, x, m.rows, m.cols, g.transposed, Scale(m)));
      } else {
        ABLATE_CUDA_CHECK(cudaMemcpyAsync(mine_.get() + gather_.LocalOffset(g.members[j]), x,
                                          size_t(per) * sizeof(bf16), cudaMemcpyDeviceToDevice,
                                          ctx.stream()));
      }
    }
  }
  if (world_ == 1) return {};
  // The gather runs on the communication stream while the caller queues Adam.
  cudaStream_t comm = static_cast<cudaStream_t>(coll->stream());
  ABLATE_RETURN_IF_ERROR(packed_.Order(ctx.stream(), comm));
  return coll->AllGather(mine_.get(), all_.get(), gather_.width, WireType::kBf16);
}

Status Muon::Finish(CudaContext& ctx, float* params, DeviceCollectives* coll) {
  if (world_ == 1) return {};
  ABLATE_RETURN_IF_ERROR(gathered_.Order(static_cast<cudaStream_t>(coll->stream()), ctx.stream()));
  for (size_t i = 0; i < matrices_.size(); ++i) {
    const MuonMatrix& m = matrices_[i];
    const bf16* x = all_.get() + gather_.GatheredOffset(int64_t(i));
    ABLATE_RETURN_IF_ERROR(
        muon_apply(ctx, params + m.offset, x, m.rows, m.cols, m.rows > m.cols, Scale(m)));
  }
  return {};
}

int64_t Muon::StateSize() const {
  int64_t n = 0;
  for (const MuonMatrix& m : matrices_) n += m.rows * m.cols;
  return n;
}

Status Muon::GetState(CudaContext& ctx, std::vector<float>& momentum) {
  momentum.assign(size_t(StateSize()), 0.f);
  int64_t at = 0;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    int64_t n = matrices_[i].rows * matrices_[i].cols;
    if (momentum_offsets_[i] >= 0) {
      ABLATE_RETURN_IF_ERROR(ctx.ToHost(momentum.data() + at,
                                        momentum_.get() + momentum_offsets_[i], n * 4));
    }
    at += n;
  }
  return {};
}

Status Muon::SetState(CudaContext& ctx, const std::vector<float>& momentum) {
  int64_t at = 0;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    int64_t n = matrices_[i].rows * matrices_[i].cols;
    if (momentum_offsets_[i] >= 0) {
      ABLATE_RETURN_IF_ERROR(ctx.ToDevice(momentum_.get() + momentum_offsets_[i],
                                          momentum.data() + at, n * 4));
    }
    at += n;
  }
  return ctx.Synchronize();
}

}  // namespace ablate::cuda
