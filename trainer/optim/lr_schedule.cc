// Trapezoid / cooldown-fraction schedule with floor, and linear momentum warm-up.
#include "trainer/optim/lr_schedule.h"

#include <algorithm>

namespace ablate {

double LrSchedule::Multiplier(int64_t step) const {
  if (step < warmup_iters) return double(step + 1) / double(warmup_iters);
  double w = 1;
  if (cooldown_frac > 0) {
    double x = double(step) / double(num_iterations);
    w = std::min((1 - x) / cooldown_frac, 1.0);
  } else if (step >= num_iterations - warmdown_iters) {
    w = double(num_iterations - step) / double(warmdown_iters);
  }
  return w + (1 - w) * lr_floor;
}

double MomentumSchedule::At(int64_t step) const {
  if (warmup_steps <= 0) return momentum;
  double frac = std::min(double(step) / double(warmup_steps), 1.0);
  return (1 - frac) * warmup_start + frac * warmup_end;
}

}  // namespace ablate
