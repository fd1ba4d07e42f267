// A modded-nanogpt record log (issue 39): the file a record's pull request adds under records/,
// read strictly, as `ablate import` and `ablate verify-record` need it. The file is the training
// script, then nvidia-smi's table, then the run's output, parted by lines of '=' (100 of them in
// the records; 50 or more count here):
//   [====]  (era 2024-10/11: the file opens with one)
//   import os ... (the script)
//   ====
//   nvidia-smi's table
//   ====
//   step:0/1750 val_loss:10.8258 train_time:0ms step_avg:0.03ms
//   step:1/1750 train_time:157ms step_avg:157.21ms
//   ...
//   step:1750/1750 val_loss:3.2768 train_time:177234ms step_avg:101.28ms
// The variations the record eras show, all accepted:
//   - train lines with `train_loss:` (2024) or without (2024-12 on); val lines between them;
//   - `step_avg:nanms` before timing starts; extra fields after the known ones (ema_beta,
//     val_avg_loss, ..., any key:value);
//   - train_time in ms, or in seconds (`train_time:2150.483s`, track 3);
//   - the 2024 clock reset: train_time counts from step 10, so it drops once, early
//     (77676ms at step 10, 214ms at step 11); times before the drop are compile time and are
//     dropped, and ms/step counts the timed steps only;
//   - val_loss with 4 or 6 decimals; free text lines between step lines (warmup notes, peak
//     memory); no final newline; no script (a bare stdout capture).
// Refused, with the file and line: no step line at all ("not a record log"), a step line with a
// field it cannot read (val_loss not a finite number, train_time without a unit, step:K/N with
// N changing), steps going back (several runs in one file: split it), train_time going back
// other than the one early reset, and a log that ends before its last step N/N without a
// validation at or below the target (truncated). Track 3's runs stop at the first validation
// at or below the target, before N: that is a complete log.
// Pure logic over a string; no I/O. Any byte string is safe input.
#ifndef ABLATE_COMMON_RECORD_LOG_H_
#define ABLATE_COMMON_RECORD_LOG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ablate {

// Largest log `ablate import` reads (the records' longest are ~2 MB; a 20k-step log ~4 MB).
inline constexpr int64_t kMaxRecordLogBytes = int64_t{16} << 20;

// One step line. A val line has val_loss; a train line may have train_loss. train_time_ms is
// unset before the clock reset and where the line printed none.
struct RecordLogPoint {
  int64_t step = 0;
  int line = 0;  // 1-based line of the file
  std::optional<double> val_loss;
  std::optional<double> train_loss;
  std::optional<double> train_time_ms;
};

struct RecordLog {
  std::string script;     // the text before the separator ("" when the log has none)
  int64_t total_steps = 0;  // N of step:K/N
  int64_t final_step = 0;   // the final validation's step: N, or earlier for a run that stopped
                            // at the target
  std::vector<RecordLogPoint> points;  // file order
  double final_val_loss = 0;           // the validation at step N
  double final_train_time_ms = 0;      // its train_time
  // The step the clock started from: 10 for a 2024 log that reset it, else 0. ms/step is
  // final_train_time_ms / (final_step - timed_from_step).
  int64_t timed_from_step = 0;
  bool seconds = false;  // train_time was printed in seconds
  // GPU names in nvidia-smi's table, one per GPU (e.g. 8 x "NVIDIA H100 80GB HBM3"): what the
  // log says it ran on, not a claim this cluster has checked.
  std::vector<std::string> logged_gpus;
  int lines = 0;

  double mean_step_ms() const;
  // "8x NVIDIA H100 80GB HBM3", "2x A, 6x B", or "" when the log has no nvidia-smi table.
  std::string LoggedHardware() const;
};

// INVALID_ARGUMENT "FILE:LINE: what" (or "FILE: what" for the whole file) when `text` is not a
// complete record log. `file` is only used in messages; `target` is the val loss a run may stop
// at before step N.
absl::StatusOr<RecordLog> ParseRecordLog(std::string_view text, std::string_view file,
                                         double target = 3.28);

// Time to `target`: train_time at the first validation with val_loss <= target, and its step;
// nullopt when none reached it (or that validation has no train_time).
struct TargetHit {
  int64_t step = 0;
  double train_time_ms = 0;
};
std::optional<TargetHit> TimeToTarget(const RecordLog& log, double target);

}  // namespace ablate

#endif  // ABLATE_COMMON_RECORD_LOG_H_
