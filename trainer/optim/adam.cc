// Adam, written as torch does it: denom = sqrt(v)/sqrt(1 − β2^t) + eps,
// p −= lr/(1 − β1^t) · m/denom. One fused pass per element (read p, g, m, v; write p, m, v:
// 28 bytes), memory-bound: the spans are cut once into fixed chunks that one parallel loop per
// step hands out, so the many small scalar spans cost no fork/join of their own.
#include "trainer/optim/adam.h"

#include <algorithm>
#include <cmath>

#include "trainer/cpu/parallel.h"
#include "trainer/model/bf16.h"

namespace ablate {
namespace {

// 16K floats: 64 KB per stream, ~850 chunks at 13.7M params, enough to balance two threads
// when one is preempted and few enough that handing them out costs nothing.
constexpr int64_t kChunk = 16384;

// The per-step constants of one span, computed once outside the element loop.
struct AdamCoeffs {
  float b1, one_minus_b1, b2, one_minus_b2, step_size, inv_bc2, eps;
};

// n elements of one span. Restrict pointers and by-value coefficients so that GCC keeps the
// constants in registers and vectorises the loop (sqrt and div included, -fno-math-errno).
void AdamUpdate(float* __restrict p, const float* __restrict g, float* __restrict m,
                float* __restrict v, int64_t n, const AdamCoeffs k) {
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    float mi = k.b1 * m[i] + k.one_minus_b1 * gi;
    float vi = k.b2 * v[i] + k.one_minus_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= k.step_size * mi / (std::sqrt(vi) * k.inv_bc2 + k.eps);
  }
}

// The same for a span stored in bf16 (AdamSpan::bf16).
void AdamUpdateBf16(float* __restrict p, const float* __restrict g, float* __restrict m,
                    float* __restrict v, int64_t n, const AdamCoeffs k) {
  for (int64_t i = 0; i < n; ++i) {
    float gi = RoundToBf16(g[i]);
    float mi = RoundToBf16(k.b1 * m[i] + k.one_minus_b1 * gi);
    float vi = RoundToBf16(k.b2 * v[i] + k.one_minus_b2 * gi * gi);
    m[i] = mi;
    v[i] = vi;
    p[i] = RoundToBf16(p[i] - k.step_size * mi / (std::sqrt(vi) * k.inv_bc2 + k.eps));
  }
}

}  // namespace

Adam::Adam(AdamConfig config, std::vector<AdamSpan> spans)
    : config_(config), spans_(std::move(spans)) {
  for (size_t k = 0; k < spans_.size(); ++k) {
    m_.emplace_back(spans_[k].numel, 0.f);
    v_.emplace_back(spans_[k].numel, 0.f);
    for (int64_t b = 0; b < spans_[k].numel; b += kChunk) {
      chunks_.push_back({int64_t(k), b, std::min(spans_[k].numel, b + kChunk)});
    }
  }
}

void Adam::Step(float* params, const float* grads, double lr_mult) {
  ++t_;
  double bc1 = 1 - std::pow(config_.beta1, double(t_));
  double bc2_sqrt = std::sqrt(1 - std::pow(config_.beta2, double(t_)));
  std::vector<AdamCoeffs> coeffs(spans_.size());
  for (size_t k = 0; k < spans_.size(); ++k) {
    float b1 = float(config_.beta1), b2 = float(config_.beta2);
    coeffs[k] = {b1, 1 - b1, b2, 1 - b2, float(spans_[k].lr * lr_mult / bc1),
                 float(1 / bc2_sqrt), float(config_.eps)};
  }
  cpu::ParallelForDynamic(int64_t(chunks_.size()), [&](int64_t c) {
    const Chunk& ch = chunks_[c];
    const AdamSpan& s = spans_[ch.span];
    int64_t at = s.offset + ch.begin;
    auto* update = s.bf16 ? AdamUpdateBf16 : AdamUpdate;
    update(params + at, grads + at, m_[ch.span].data() + ch.begin, v_[ch.span].data() + ch.begin,
           ch.end - ch.begin, coeffs[ch.span]);
  });
}

int64_t Adam::StateSize() const {
  int64_t n = 0;
  for (const AdamSpan& s : spans_) n += s.numel;
  return n;
}

void Adam::GetState(int64_t& steps, std::vector<float>& m, std::vector<float>& v) const {
  steps = t_;
  m.clear();
  v.clear();
  for (size_t k = 0; k < spans_.size(); ++k) {
    m.insert(m.end(), m_[k].begin(), m_[k].end());
    v.insert(v.end(), v_[k].begin(), v_[k].end());
  }
}

void Adam::SetState(int64_t steps, const std::vector<float>& m, const std::vector<float>& v) {
  t_ = steps;
  int64_t at = 0;
  for (size_t k = 0; k < spans_.size(); ++k) {
    std::copy(m.begin() + at, m.begin() + at + spans_[k].numel, m_[k].begin());
    std::copy(v.begin() + at, v.begin() + at + spans_[k].numel, v_[k].begin());
    at += spans_[k].numel;
  }
}

}  // namespace ablate
