// Muon. Each round of `world` matrices is computed one per rank into a padded buffer, then one
// all-gather gives every rank every update of the round.
#include "trainer/optim/muon.h"

#include <algorithm>
#include <cmath>

#include "trainer/cpu/matmul.h"

namespace ablate {
namespace {

using cpu::Gemm;
using cpu::Trans;

void Transpose(const float* in, float* out, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) out[j * rows + i] = in[i * cols + j];
  }
}

// X (r, c) with r <= c: `steps` iterations in place. aX + BX is one GEMM with B' = aI + B, and
// the iterate ping-pongs between x and a scratch buffer instead of being copied every step.
// (SYRK would halve the multiply-adds of the two symmetric products, but OpenBLAS's ssyrk runs
// 1.5–7× slower than sgemm at these shapes.)
void Iterate(float* x, int64_t r, int64_t c, int steps, const std::array<double, 3>& k) {
  std::vector<float> a(r * r), b(r * r), next(r * c);
  float* cur = x;
  float* other = next.data();
  for (int s = 0; s < steps; ++s) {
    Gemm<float>(Trans::kNo, Trans::kYes, r, r, c, 1.f, cur, c, cur, c, 0.f, a.data(), r);
    // b = ka·I + kb·A + kc·A·A
    std::copy(a.begin(), a.end(), b.begin());
    Gemm<float>(Trans::kNo, Trans::kNo, r, r, r, float(k[2]), a.data(), r, a.data(), r,
                float(k[1]), b.data(), r);
    for (int64_t i = 0; i < r; ++i) b[i * r + i] += float(k[0]);
    Gemm<float>(Trans::kNo, Trans::kNo, r, c, r, 1.f, b.data(), r, cur, c, 0.f, other, c);
    std::swap(cur, other);
  }
  if (cur != x) std::copy(cur, cur + r * c, x);
}

}  // namespace

void NewtonSchulz(float* x, int64_t rows, int64_t cols, int steps,
                  const std::array<double, 3>& coeffs) {
  int64_t n = rows * cols;
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
  float inv = float(1.0 / (std::sqrt(ss) + 1e-7));
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
  if (rows <= cols) return Iterate(x, rows, cols, steps, coeffs);
  std::vector<float> t(n);
  Transpose(x, t.data(), rows, cols);
  Iterate(t.data(), cols, rows, steps, coeffs);
  Transpose(t.data(), x, cols, rows);
}

double MuonScale(MuonScaleRule rule, int64_t rows, int64_t cols) {
  if (rule == MuonScaleRule::kSqrtMaxDim) return std::sqrt(double(std::max(rows, cols)));
  return std::sqrt(std::max(1.0, double(rows) / double(cols)));
}

Muon::Muon(MuonConfig config, std::vector<MuonMatrix> matrices, int rank, int world)
    : config_(config), matrices_(std::move(matrices)), rank_(rank), world_(world),
      momentum_(matrices_.size()) {
  for (size_t i = 0; i < matrices_.size(); ++i) {
    if (int(i % world_) == rank_) momentum_[i].assign(matrices_[i].rows * matrices_[i].cols, 0.f);
  }
}

// out (rows·cols) = lr·scale·NS(g'), g' the (Nesterov) momentum of this matrix's gradient.
void Muon::Update(int64_t index, const float* grads, double lr, double mu, float* out) {
  const MuonMatrix& m = matrices_[index];
  int64_t n = m.rows * m.cols;
  const float* g = grads + m.offset;
  std::vector<float>& buf = momentum_[index];
  float muf = float(mu);
  for (int64_t i = 0; i < n; ++i) {
    buf[i] = muf * buf[i] + g[i];
    out[i] = config_.nesterov ? g[i] + muf * buf[i] : buf[i];
  }
  NewtonSchulz(out, m.rows, m.cols, config_.ns_steps, config_.ns_coeffs);
  float k = float(lr * MuonScale(config_.scale_rule, m.rows, m.cols));
  for (int64_t i = 0; i < n; ++i) out[i] *= k;
}

Status Muon::Step(float* params, const float* grads, double lr_mult, int64_t step,
                  Communicator& comm) {
  double lr = config_.lr * lr_mult, mu = config_.momentum.At(step);
  int64_t count = int64_t(matrices_.size());
  for (int64_t base = 0; base < count; base += world_) {
    int64_t width = 0;
    for (int64_t i = base; i < std::min(count, base + world_); ++i) {
      width = std::max(width, matrices_[i].rows * matrices_[i].cols);
    }
    std::vector<float> mine(width, 0.f), all(width * world_);
    if (base + rank_ < count) Update(base + rank_, grads, lr, mu, mine.data());
    Status s = comm.AllGather(mine, all);
    if (!s.ok()) return s;
    for (int64_t i = base; i < std::min(count, base + world_); ++i) {
      const MuonMatrix& m = matrices_[i];
      const float* u = all.data() + (i - base) * width;
      float* p = params + m.offset;
      for (int64_t j = 0; j < m.rows * m.cols; ++j) p[j] -= u[j];
    }
  }
  return {};
}

}  // namespace ablate
