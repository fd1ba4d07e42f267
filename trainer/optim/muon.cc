// Muon. Each round of `world` matrices is computed one per rank into that round's padded slot
// of one buffer; a single all-gather per step then gives every rank every update.
#include "trainer/optim/muon.h"

#include <algorithm>
#include <cmath>

#include <omp.h>

#include "trainer/cpu/matmul.h"
#include "trainer/cpu/parallel.h"

namespace ablate {
namespace {

using cpu::Gemm;
using cpu::Trans;

// Grows v to at least n floats (never shrinks: the buffers are reused across matrices and
// steps) and returns its data.
float* Grow(std::vector<float>& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(n);
  return v.data();
}

void Transpose(const float* in, float* out, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) out[j * rows + i] = in[i * cols + j];
  }
}

// X (r, c) with r <= c: `steps` iterations in place. aX + BX is one GEMM with B' = aI + B, and
// the iterate ping-pongs between x and a scratch buffer instead of being copied every step.
// (SYRK would halve the multiply-adds of the two symmetric products, but OpenBLAS's ssyrk runs
// 1.5–7× slower than sgemm at these shapes.)
void Iterate(float* x, int64_t r, int64_t c, int steps, const std::array<double, 3>& k,
             NsScratch& scratch) {
  float* a = Grow(scratch.a, r * r);
  float* b = Grow(scratch.b, r * r);
  float* cur = x;
  float* other = Grow(scratch.next, r * c);
  for (int s = 0; s < steps; ++s) {
    Gemm<float>(Trans::kNo, Trans::kYes, r, r, c, 1.f, cur, c, cur, c, 0.f, a, r);
    // b = ka·I + kb·A + kc·A·A
    std::copy(a, a + r * r, b);
    Gemm<float>(Trans::kNo, Trans::kNo, r, r, r, float(k[2]), a, r, a, r, float(k[1]), b, r);
    for (int64_t i = 0; i < r; ++i) b[i * r + i] += float(k[0]);
    Gemm<float>(Trans::kNo, Trans::kNo, r, c, r, 1.f, b, r, cur, c, 0.f, other, c);
    std::swap(cur, other);
  }
  if (cur != x) std::copy(cur, cur + r * c, x);
}

}  // namespace

void NewtonSchulz(float* x, int64_t rows, int64_t cols, int steps,
                  const std::array<double, 3>& coeffs) {
  NsScratch scratch;
  NewtonSchulz(x, rows, cols, steps, coeffs, scratch);
}

void NewtonSchulz(float* x, int64_t rows, int64_t cols, int steps,
                  const std::array<double, 3>& coeffs, NsScratch& scratch) {
  int64_t n = rows * cols;
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
  float inv = float(1.0 / (std::sqrt(ss) + 1e-7));
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
  if (rows <= cols) return Iterate(x, rows, cols, steps, coeffs, scratch);
  float* t = Grow(scratch.transposed, n);
  Transpose(x, t, rows, cols);
  Iterate(t, cols, rows, steps, coeffs, scratch);
  Transpose(t, x, cols, rows);
}

double MuonScale(MuonScaleRule rule, int64_t rows, int64_t cols) {
  if (rule == MuonScaleRule::kSqrtMaxDim) return std::sqrt(double(std::max(rows, cols)));
  return std::sqrt(std::max(1.0, double(rows) / double(cols)));
}

MuonGatherLayout MuonGatherLayout::Make(const std::vector<MuonMatrix>& matrices, int world) {
  MuonGatherLayout g;
  g.world = world;
  int64_t count = int64_t(matrices.size());
  for (int64_t base = 0; base < count; base += world) {
    int64_t width = 0;
    for (int64_t i = base; i < std::min(count, base + world); ++i) {
      width = std::max(width, matrices[i].rows * matrices[i].cols);
    }
    g.round_offsets.push_back(g.width);
    g.width += width;
  }
  return g;
}

Muon::Muon(MuonConfig config, std::vector<MuonMatrix> matrices, int rank, int world)
    : config_(config), matrices_(std::move(matrices)), rank_(rank), world_(world),
      momentum_(matrices_.size()), gather_(MuonGatherLayout::Make(matrices_, world)) {
  int64_t count = int64_t(matrices_.size());
  for (int64_t i = 0; i < count; ++i) {
    if (gather_.Owner(i) == rank_) momentum_[i].assign(matrices_[i].rows * matrices_[i].cols, 0.f);
  }
  mine_.assign(gather_.width, 0.f);
  all_.assign(gather_.width * world_, 0.f);
}

// out (rows·cols) = lr·scale·NS(g'), g' the (Nesterov) momentum of this matrix's gradient.
void Muon::Update(int64_t index, const float* grads, double lr, double mu, float* out,
                  NsScratch& scratch) {
  const MuonMatrix& m = matrices_[index];
  int64_t n = m.rows * m.cols;
  const float* g = grads + m.offset;
  float* buf = momentum_[index].data();
  float muf = float(mu);
  if (config_.momentum_form == MomentumForm::kLerp) {
    float w = float(1.0 - mu);  // torch receives 1 - μ as a Python float
    for (int64_t i = 0; i < n; ++i) buf[i] = TorchLerp(buf[i], g[i], w);
  } else {
    for (int64_t i = 0; i < n; ++i) buf[i] = muf * buf[i] + g[i];
  }
  if (!config_.nesterov) {
    std::copy(buf, buf + n, out);
  } else if (config_.momentum_form == MomentumForm::kLerp) {
    for (int64_t i = 0; i < n; ++i) out[i] = TorchLerp(g[i], buf[i], muf);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = g[i] + muf * buf[i];
  }
  NewtonSchulz(out, m.rows, m.cols, config_.ns_steps, config_.ns_coeffs, scratch);
  float k = float(lr * MuonScale(config_.scale_rule, m.rows, m.cols));
  for (int64_t i = 0; i < n; ++i) out[i] *= k;
}

// This rank's matrices run one per thread of its team (each Newton–Schulz GEMM on its thread:
// at 128–768 rows, whole matrices per thread beat GEMMs split in row blocks), each into its
// round's slot of mine_; one all-gather then hands every rank every update.
Status Muon::Step(float* params, const float* grads, double lr_mult, int64_t step,
                  Communicator& comm) {
  double lr = config_.lr * lr_mult, mu = config_.momentum.At(step);
  int64_t count = int64_t(matrices_.size()), rounds = int64_t(gather_.round_offsets.size());
  scratch_.resize(std::max<size_t>(scratch_.size(), size_t(omp_get_max_threads())));
  cpu::ParallelForDynamic(rounds, [&](int64_t r) {
    int64_t index = r * world_ + rank_;
    if (index < count) {
      Update(index, grads, lr, mu, mine_.data() + gather_.LocalOffset(index),
             scratch_[omp_get_thread_num()]);
    }
  });
  Status s = comm.AllGather(mine_, all_);
  if (!s.ok()) return s;
  cpu::ParallelForDynamic(count, [&](int64_t i) {
    const MuonMatrix& m = matrices_[i];
    const float* u = all_.data() + gather_.GatheredOffset(i);
    float* p = params + m.offset;
    for (int64_t j = 0; j < m.rows * m.cols; ++j) p[j] -= u[j];
  });
  return {};
}

int64_t Muon::StateSize() const {
  int64_t n = 0;
  for (const MuonMatrix& m : matrices_) n += m.rows * m.cols;
  return n;
}

Status Muon::GetState(std::vector<float>& momentum, Communicator& comm) const {
  momentum.assign(size_t(StateSize()), 0.f);
  int64_t at = 0;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    std::copy(momentum_[i].begin(), momentum_[i].end(), momentum.begin() + at);
    at += matrices_[i].rows * matrices_[i].cols;
  }
  if (world_ == 1) return {};
  return comm.AllReduce(momentum, ReduceOp::kSum);
}

void Muon::SetState(const std::vector<float>& momentum) {
  int64_t at = 0;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    int64_t n = matrices_[i].rows * matrices_[i].cols;
    if (!momentum_[i].empty()) {
      std::copy(momentum.begin() + at, momentum.begin() + at + n, momentum_[i].begin());
    }
    at += n;
  }
}

}  // namespace ablate
