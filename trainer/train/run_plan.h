// What every rank of a run shares, read-only: typed model and optimizer knobs, the schedule of
// steps and evaluations, and where the run computes. Built by Train(); internal to trainer/train
// and the backends' engines.
#ifndef ABLATE_TRAINER_TRAIN_RUN_PLAN_H_
#define ABLATE_TRAINER_TRAIN_RUN_PLAN_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/thread_annotations.h"
#include "trainer/config/attention_impl.h"
#include "trainer/model/model_config.h"
#include "trainer/optim/optimizer.h"
#include "trainer/train/trainer.h"
#include "trainer/weights/checkpoint.h"

namespace ablate {

// Raised by the first rank of this process that fails on its own (not by a decision all ranks
// took together). The other ranks' waits for the device and for collectives poll flag() and
// give up; they then report why() (the first rank's error) instead of their own "gave up".
// Thread-safe.
class AbortSignal {
 public:
  // Raises the signal; true for the first caller, whose `why` is kept.
  bool Raise(const std::string& why) {
    AnnotatedMutexLock lock(&mu_);
    if (raised_.load()) return false;
    why_ = why;
    raised_.store(true);
    return true;
  }
  bool raised() const { return raised_.load(); }
  const std::atomic<bool>* flag() const { return &raised_; }
  std::string why() const {
    AnnotatedMutexLock lock(&mu_);
    return why_;
  }

 private:
  std::atomic<bool> raised_{false};  // set under mu_, read without it
  mutable AnnotatedMutex mu_;
  std::string why_ ABLATE_GUARDED_BY(mu_);
};

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
  // Backend cuda: which attention kernels (trainer/config/attention_impl.h); a speed choice only.
  AttentionImpl attention = AttentionImpl::kAuto;
  const std::atomic<bool>* stop = nullptr;
  int steps_in_flight = -1;      // TrainOptions::steps_in_flight
  std::string config_hash = "";
  // Weights and checkpoints (TrainOptions). Loaded by Train() before the ranks start.
  const std::vector<float>* init_weights = nullptr;  // --init-from, ParamLayout order
  const Checkpoint* resume = nullptr;                // --resume's checkpoint, when one was found
  std::string save_path = "";
  int64_t save_every = 0;
  std::string checkpoint_dir = "";
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_ms = 0;
  AbortSignal* abort = nullptr;  // shared by this process's ranks; owned by Train()
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_RUN_PLAN_H_
