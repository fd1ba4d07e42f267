// Adam, written as torch does it: denom = sqrt(v)/sqrt(1 − β2^t) + eps,
// p −= lr/(1 − β1^t) · m/denom.
#include "trainer/optim/adam.h"

#include <cmath>

#include "trainer/cpu/parallel.h"

namespace ablate {

Adam::Adam(AdamConfig config, std::vector<AdamSpan> spans)
    : config_(config), spans_(std::move(spans)) {
  for (const AdamSpan& s : spans_) {
    m_.emplace_back(s.numel, 0.f);
    v_.emplace_back(s.numel, 0.f);
  }
}

void Adam::Step(float* params, const float* grads, double lr_mult) {
  ++t_;
  float b1 = float(config_.beta1), b2 = float(config_.beta2);
  double bc1 = 1 - std::pow(config_.beta1, double(t_));
  double bc2_sqrt = std::sqrt(1 - std::pow(config_.beta2, double(t_)));
  float eps = float(config_.eps);
  for (size_t k = 0; k < spans_.size(); ++k) {
    const AdamSpan& s = spans_[k];
    float step_size = float(s.lr * lr_mult / bc1), inv_bc2 = float(1 / bc2_sqrt);
    float* p = params + s.offset;
    const float* g = grads + s.offset;
    float* m = m_[k].data();
    float* v = v_[k].data();
    cpu::ParallelFor((s.numel + 4095) / 4096, [&](int64_t c) {
      for (int64_t i = c * 4096, e = std::min(s.numel, i + 4096); i < e; ++i) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_bc2 + eps);
      }
    });
  }
}

}  // namespace ablate
