// What every rank of a run shares, read-only: typed model and optimizer knobs, the schedule of
// steps and evaluations, and where the run computes. Built by Train(); internal to trainer/train
// and the backends' engines.
#ifndef ABLATE_TRAINER_TRAIN_RUN_PLAN_H_
#define ABLATE_TRAINER_TRAIN_RUN_PLAN_H_

#include <atomic>
#include <cstdint>
#include <vector>

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
  // Backend cuda: this process's GPUs, one per local rank; global rank first_rank + j runs on
  // devices[j] (first_rank = node_rank × GPUs per node).
  std::vector<int> devices = {0};
  int first_rank = 0;
  int DeviceOf(int rank) const { return devices.at(size_t(rank - first_rank)); }
  const std::atomic<bool>* stop = nullptr;
  int steps_in_flight = -1;  // TrainOptions::steps_in_flight
  // Set by a rank of this process that failed on its own: the others' waits for the device and
  // for collectives give up instead of waiting for it forever. Owned by Train().
  std::atomic<bool>* abort = nullptr;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_RUN_PLAN_H_
