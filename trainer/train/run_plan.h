// What every rank of a run shares, read-only: typed model and optimizer knobs, the schedule of
// steps and evaluations, and where the run computes. Built by Train(); internal to trainer/train
// and the backends' engines.
#ifndef ABLATE_TRAINER_TRAIN_RUN_PLAN_H_
#define ABLATE_TRAINER_TRAIN_RUN_PLAN_H_

#include <atomic>
#include <cstdint>

#include "trainer/model/model_config.h"
#include "trainer/optim/optimizer.h"
#include "trainer/train/trainer.h"

namespace ablate {

struct RunPlan {
  ModelConfig model;
  OptimConfig optim;
  int64_t num_iterations = 0;
  int64_t last_step = 0;  // steps to train: min(num_iterations, max_steps)
  int64_t val_every = 0;
  int64_t untimed_steps = 0;
  int64_t batch_tokens = 0;
  int64_t micro_batch = 0;  // B
  double target_val_loss = 0;
  uint64_t seed = 0;
  int threads_per_rank = 1;
  Backend backend = Backend::kCpu;
  int device = 0;  // CUDA device index (backend cuda)
  const std::atomic<bool>* stop = nullptr;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_RUN_PLAN_H_
