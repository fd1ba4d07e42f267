// Training a GPT from a canonical config: on the CPU backend N ranks as threads, on the CUDA
// backend one rank per GPU, one thread per rank, one process per node (NCCL between GPUs); the
// global batch and the validation set do not depend on the world size; data from token shards,
// evaluation and timing as DESIGN §6.1 says (step_ms is wall time with the device synchronised at
// the end of the step), events to an EventSink.
//
// Events (global rank 0 emits them; on a multi-node run every node's first rank emits the same
// stream, since every value in it is all-reduced):
//   start {config, config_hash, backend, world_size, threads, grad_accum_steps, micro_batch,
//          resumed_from ({step, path, train_ms} of the checkpoint, or null), init_from,
//          seq_len, params: {total, by_group}, param_groups: [{name, shape, group, lr}],
//          device (backend cuda: the GPU's name), gpus, nnodes, node_rank (backend cuda),
//          gpu_memory (backend cuda: {used_bytes, peak_used_bytes, total_bytes, model_bytes} of
//          the emitting rank's GPU after the model and optimizer were allocated)}
//   step  {step (steps completed), train_loss, lr (schedule multiplier of every base lr),
//          momentum, step_ms, train_ms (cumulative, untimed steps excluded), tokens}
//   val   {step (steps completed), val_loss, train_ms}
//   checkpoint {step (steps completed), path, bytes, write_ms}
//   save  {step, path} (--save, --save-every)
//   end   {status ok|cancelled|failed, final_val_loss|null, time_to_target_ms|null,
//          target_step|null, steps, train_ms, gpu_memory (backend cuda: as in start, the
//          peak over the run's samples)}
//   error {message}
#ifndef ABLATE_TRAINER_TRAIN_TRAINER_H_
#define ABLATE_TRAINER_TRAIN_TRAINER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/config/attention_impl.h"
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
  // Backend cuda: this node's device indices as CUDA numbers them (after
  // CUDA_VISIBLE_DEVICES), one rank each. world_size must be 1 (then computed) or
  // nnodes × gpus.size().
  std::vector<int> gpus = {0};
  // Several nodes (backend cuda): this process is node `node_rank` of `nnodes`; its ranks are
  // node_rank × gpus.size() + j. Every node must have the same number of GPUs.
  int nnodes = 1;
  int node_rank = 0;
  // The NCCL id of a multi-node run. Node rank 0 creates it and writes nccl_id_file; the other
  // nodes take nccl_id (kNcclIdBytes bytes) when set, else read nccl_id_file, waiting up to
  // nccl_id_wait for it to appear.
  std::string nccl_id_file = "";
  std::string nccl_id = "";
  std::chrono::milliseconds nccl_id_wait{std::chrono::minutes(10)};
  // Backend cuda: NCCL even for a single rank, so that the multi-GPU path (gradient reduction
  // hooks, events, the communicator) can be tested on one GPU.
  bool nccl_on_one_gpu = false;
  // Train steps the loop queues ahead of the one it reports (0 or 1); -1: the backend's own
  // (0 on the CPU, 1 on a GPU). Setting 1 on the CPU runs the GPU's pipelined loop, for tests.
  int steps_in_flight = -1;
  // Backend cuda: which attention kernels run (a speed choice only; for tests and benches).
  AttentionImpl attention = AttentionImpl::kAuto;
  // Weights (weights/weights_file.h): start from this safetensors file instead of the seed's
  // initialisation; write the weights to save_path at the end (and every save_every steps).
  std::string init_from = "";
  std::string save_path = "";
  int64_t save_every = 0;
  // Checkpoints (weights/checkpoint.h) into checkpoint_dir every checkpoint_every_steps steps
  // and/or whenever checkpoint_every_ms of wall time have passed since the last one (rank 0's
  // clock, agreed through the step reports). resume_dir: continue from its newest readable
  // checkpoint (none: start at step 0); checkpoint_dir defaults to it.
  std::string checkpoint_dir = "";
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_ms = 0;
  std::string resume_dir = "";
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
TrainOutcome Train(const nlohmann::json& canonical, const TrainOptions& options, EventSink& events);

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_TRAINER_H_
