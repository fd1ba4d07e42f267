// Metrics from a training script's stdout (issue 14): each line is auto-detected as one of two
// formats, or ignored.
//   - ablate's JSON-lines events, as ablate-train prints them (trainer_events.h; README "Script
//     runs"): {"event":"step","step":N,"train_loss":x,"train_ms":t,...}, {"event":"val",...},
//     {"event":"end",...}.
//   - modded-nanogpt's log lines, as the records print them:
//       step:125/1393 val_loss:4.2618 train_time:16234ms step_avg:129.87ms
//       step:126/1393 train_loss:4.1234 train_time:16364ms step_avg:129.88ms
//     (train_loss may be missing; step_avg may be "nanms"; extra fields may follow).
// The parser also keeps what the summary needs: time to target is train_time at the first val
// line with val_loss <= target (as the speedrun counts it), the final val loss is the last val
// line's. Step times, one definition for every script (the printed step_avg is not used): a
// point's step_ms is the train_time since the previous point with one, per step; the run's
// mean_step_ms is the last train_time over its step, so that steps x ms/step is the training
// time (compare's split of time to target into steps and ms/step). Pure logic over strings; no I/O. Any byte string is safe input (a 1 MB line included).
#ifndef ABLATE_WORKER_SCRIPT_OUTPUT_H_
#define ABLATE_WORKER_SCRIPT_OUTPUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ablate/v1/types.pb.h"
#include "worker/trainer_events.h"

namespace ablate::worker {

// Which formats a script may print (spec key `log_format`).
enum class LogFormat { kAuto, kModdedNanogpt, kAblateEvents };

// "auto", "modded-nanogpt", "ablate-events"; nullopt for anything else.
std::optional<LogFormat> ParseLogFormat(std::string_view name);
std::string_view LogFormatName(LogFormat format);

// One modded-nanogpt line: `step:N/M` first, then key:value fields. nullopt when the line is not
// one (or says nothing but the step). val lines give {step, val_loss, train_time_ms}; train lines
// {step, train_loss (when printed), train_time_ms}. `step_avg_ms` is step_avg when it is a number.
struct NanogptLine {
  v1::MetricPoint point;
  bool is_val = false;
  std::optional<double> step_avg_ms;
};
std::optional<NanogptLine> ParseNanogptLine(std::string_view line);

// What one stdout line meant.
struct ScriptLine {
  enum class Kind { kIgnored, kPoint, kEnd, kError };
  Kind kind = Kind::kIgnored;
  v1::MetricPoint point;  // kPoint
  std::string message;    // kError: the error event's message
};

// Not thread-safe: one parser per run, fed lines in order.
class ScriptOutputParser {
 public:
  ScriptOutputParser(LogFormat format, std::optional<double> target_val_loss);

  ScriptLine Parse(std::string_view line);

  // Val points seen (a script that exits 0 without one has failed).
  int64_t val_points() const { return val_points_; }
  // A val or train loss that was NaN or infinite.
  bool saw_non_finite() const { return non_finite_; }
  // The summary so far; an ablate `end` event's fields win over what the lines said.
  v1::RunSummary Summary() const;

 private:
  void Observe(v1::MetricPoint* p);

  const LogFormat format_;
  const std::optional<double> target_;
  int64_t val_points_ = 0;
  bool non_finite_ = false;
  std::optional<double> last_train_time_ms_;
  std::optional<int64_t> last_timed_step_;
  v1::RunSummary summary_;
  std::optional<v1::RunSummary> end_summary_;
};

// How a script run's stdout is read (RunSpec::script).
struct ScriptOutputOptions {
  LogFormat format = LogFormat::kAuto;
  std::optional<double> target_val_loss;
  // False on nodes 1.. of a multi-node run: their ranks print no val lines (node 0's curve is the
  // run's), so a clean exit without one is ok there.
  bool val_lines_expected = true;
};

// What the worker knows when a script has exited.
struct ScriptExitFacts {
  int exit_code = 0;  // 128 + signal when killed by a signal
  bool signaled = false;
  bool cancel_requested = false;
  int64_t val_points = 0;
  bool non_finite = false;  // a NaN or infinite loss was printed
  std::string last_error;   // an ablate error event's message
  bool val_lines_expected = true;  // ScriptOutputOptions::val_lines_expected
};

// ok: exit 0 with at least one val line and finite losses; nan: a non-finite loss; cancelled:
// the worker asked it to stop; failed otherwise, with a message that says why (exit 0 without a
// single parseable val line is a failure that says so, except where no val line is expected).
ExitVerdict ClassifyScriptExit(const ScriptExitFacts& facts);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_SCRIPT_OUTPUT_H_
