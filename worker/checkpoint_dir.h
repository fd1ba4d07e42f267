// A run's checkpoint folder on the worker's --checkpoint-dir (shared storage on a cluster), and
// the trainer arguments that write checkpoints there and resume from an earlier attempt's.
// ablate-train writes DIR/ckpt-<steps done, 8 digits>.safetensors through a temporary name and
// a rename (trainer/weights/checkpoint.h), and --resume DIR takes the newest one that reads.
#ifndef ABLATE_WORKER_CHECKPOINT_DIR_H_
#define ABLATE_WORKER_CHECKPOINT_DIR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ablate::worker {

// ROOT/run-<run_id>: one folder per run, shared by all its attempts (on any worker).
std::string RunCheckpointDir(const std::string& root, int64_t run_id);

// The steps done of a checkpoint file name ("ckpt-00000120.safetensors" -> 120); nullopt for
// any other name (temporary files included).
std::optional<int64_t> CheckpointStep(const std::string& file_name);

// `ablate-train --checkpoint-every` for a period in ms: "600s", "1.5s".
std::string CheckpointEveryArg(int64_t every_ms);

struct CheckpointPlan {
  std::vector<std::string> trainer_args;  // --checkpoint-dir D --checkpoint-every X [--resume D]
  std::optional<int64_t> newest;          // the newest checkpoint kept for --resume
  std::vector<std::string> removed;       // file names removed, with why
};

// Prepares `dir` for an attempt: creates it, removes temporary files a killed trainer left and
// checkpoints with more than `resume_max_step` steps done (ahead of the run's stored curve: a
// resume from them would leave a gap, and the trainer would keep them as its newest), and
// resumes (--resume) when a checkpoint remains; the trainer takes the newest that reads and
// starts at step 0, saying so, when none does. INTERNAL when the folder cannot be created or
// listed. Not for two attempts of one run at once (the coordinator runs one at a time).
absl::StatusOr<CheckpointPlan> PlanCheckpoints(const std::string& dir, int64_t every_ms,
                                               int64_t resume_max_step);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_CHECKPOINT_DIR_H_
