// The learning-rate multiplier and the Muon momentum per step (MODEL.md "Optimizers and
// schedule"). Steps are 0-based: the step being taken.
#ifndef ABLATE_TRAINER_OPTIM_LR_SCHEDULE_H_
#define ABLATE_TRAINER_OPTIM_LR_SCHEDULE_H_

#include <cstdint>

namespace ablate {

struct LrSchedule {
  int64_t num_iterations = 1;
  int64_t warmup_iters = 0;
  int64_t warmdown_iters = 0;
  double cooldown_frac = 0;  // > 0: decay over this fraction instead of warmdown_iters
  double lr_floor = 0;       // multiplier = w + (1 − w)·floor

  double Multiplier(int64_t step) const;
};

struct MomentumSchedule {
  double momentum = 0.95;      // when warmup_steps == 0
  double warmup_start = 0.85;
  double warmup_end = 0.95;
  int64_t warmup_steps = 0;

  double At(int64_t step) const;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_OPTIM_LR_SCHEDULE_H_
