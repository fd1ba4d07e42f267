// Training a GPT from a canonical config: on the CPU backend N ranks as threads, on the CUDA
// backend one GPU; data from token shards, evaluation and timing as DESIGN §6.1 says (step_ms
// is wall time with the device synchronised at the end of the step), events to an EventSink.
//
// Events (rank 0 emits them):
//   start {config, config_hash, backend, world_size, threads, grad_accum_steps, micro_batch,
//          seq_len, params: {total, by_group}, param_groups: [{name, shape, group, lr}],
//          device (backend cuda: the GPU's name)}
//   step  {step (steps completed), train_loss, lr (schedule multiplier of every base lr),
//          momentum, step_ms, train_ms (cumulative, untimed steps excluded), tokens}
//   val   {step (steps completed), val_loss, train_ms}
//   end   {status ok|cancelled|failed, final_val_loss|null, time_to_target_ms|null,
//          target_step|null, steps, train_ms}
//   error {message}
#ifndef ABLATE_TRAINER_TRAIN_TRAINER_H_
#define ABLATE_TRAINER_TRAIN_TRAINER_H_

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/train/event_sink.h"

namespace ablate {

enum class Backend { kCpu, kCuda };

struct TrainOptions {
  std::vector<std::string> train_files;  // shards in reading order
  std::vector<std::string> val_files;
  Backend backend = Backend::kCpu;
  int world_size = 1;
  int threads = 1;         // op threads in total, split evenly across ranks
  int64_t max_steps = -1;  // stop after this many steps (schedule unchanged); -1 = all
  const std::atomic<bool>* stop = nullptr;  // when set, cancel at the next step boundary
  // Backend cuda: device indices as CUDA numbers them (after CUDA_VISIBLE_DEVICES). One device
  // per run in this version; several come with NCCL.
  std::vector<int> gpus = {0};
};

enum class TrainStatus {
  kOk,
  kCancelled,
  kInvalid,   // rejected before any work (config, data, options)
  kFailed,    // an error during training
  kDiverged,  // non-finite loss
};

struct TrainOutcome {
  TrainStatus status = TrainStatus::kOk;
  std::string message;  // for kInvalid, kFailed, kDiverged
};

// Runs the whole training. Emits start ... end (or error, then end for failures after start).
TrainOutcome Train(const nlohmann::json& canonical, const TrainOptions& options,
                   EventSink& events);

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_TRAINER_H_
