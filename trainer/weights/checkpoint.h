// Checkpoints: everything a stopped run needs to continue as if it had never stopped (the model's
// weights, the optimizers' state, the data position, the timing and evaluation results so far),
// as one safetensors file per checkpoint in a directory:
//   ckpt-<steps done, 8 digits>.safetensors
//     params/<ablate name>   F32, every parameter (exact, whatever its storage precision)
//     optim/adam_m, optim/adam_v, optim/muon_momentum   F32, flat (OptimizerState)
//     __metadata__ {"ablate.checkpoint": JSON of CheckpointMeta}
// Each is written to a temporary name and renamed, so the newest file is never partial; the two
// newest are kept. There is no random state to save: initialisation is from the seed and the
// data is read in order, so the data position is all the stream needs.
#ifndef ABLATE_TRAINER_WEIGHTS_CHECKPOINT_H_
#define ABLATE_TRAINER_WEIGHTS_CHECKPOINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/model/param_layout.h"
#include "trainer/optim/optimizer_state.h"

namespace ablate {

struct CheckpointMeta {
  int64_t steps_done = 0;   // training continues with step `steps_done` (0-based)
  std::string config_hash;  // ConfigHash of the run's config: a resume must match it
  uint64_t seed = 0;
  int data_shard = -1;  // TokenLoader::Position at the step boundary
  int64_t data_base = 0;
  bool data_started = false;
  double train_ms = 0;                   // timed steps so far (all attempts)
  std::optional<double> final_val_loss;  // the last validation so far
  std::optional<double> time_to_target_ms;
  std::optional<int64_t> target_step;
  int64_t val_done_at = -1;  // the step whose validation already ran (-1: none at steps_done)
};

struct Checkpoint {
  CheckpointMeta meta;
  std::vector<float> params;  // (layout.total())
  OptimizerState optim;
  std::string path;  // where it was read from (empty when not read)
};

// The file's bytes.
std::string SerializeCheckpoint(const Checkpoint& c, const ParamLayout& layout);
// Parses and checks a checkpoint against the layout (every parameter present with its shape,
// nothing else, metadata complete). Errors name the tensor or field.
Result<Checkpoint> ParseCheckpoint(std::string_view bytes, const ParamLayout& layout);

// Writes dir/ckpt-<steps>.safetensors atomically (creating dir), then deletes all but the two
// newest checkpoints. Returns the path written.
Result<std::string> WriteCheckpoint(const std::string& dir, const Checkpoint& c,
                                    const ParamLayout& layout);

// The newest checkpoint in dir that reads and parses, or nullopt when there is none (an absent
// or empty directory included). Unreadable ones are skipped, each with a line in `skipped`.
// A readable checkpoint of another config (hash) is an error: that directory belongs to another
// run.
Result<std::optional<Checkpoint>> LoadNewestCheckpoint(const std::string& dir,
                                                       const ParamLayout& layout,
                                                       const std::string& config_hash,
                                                       std::vector<std::string>& skipped);

}  // namespace ablate

#endif  // ABLATE_TRAINER_WEIGHTS_CHECKPOINT_H_
