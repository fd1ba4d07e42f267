// Translation of ablate-train's JSON-lines events (trainer/train/rank_runner.cc: start, step, val,
// end, error) into protocol messages: metric points, the run summary and the final status.
#ifndef ABLATE_WORKER_TRAINER_EVENTS_H_
#define ABLATE_WORKER_TRAINER_EVENTS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ablate/v1/types.pb.h"

namespace ablate::worker {

enum class EventKind { kStart, kStep, kVal, kEnd, kError, kOther };

struct TrainerEvent {
  EventKind kind = EventKind::kOther;
  nlohmann::json body;
};

// Parses one stdout line; nullopt when it is not a JSON object with an "event" field.
std::optional<TrainerEvent> ParseTrainerEvent(const std::string& line);

// step event -> {step, train_loss, lr, step_ms, train_time_ms, tokens};
// val event -> {step, val_loss}. Missing or null fields stay unset. nullopt when the event has no
// step that is a whole number >= 0 (a script's output is untrusted: such a line is no point).
std::optional<v1::MetricPoint> PointFromEvent(const TrainerEvent& event);

// A start event's resumed_from ({step, path, train_ms} of the checkpoint the trainer went on
// from); nullopt when it is null, absent or has no integer step.
struct ResumedFrom {
  int64_t step = 0;
  std::string path;
};
std::optional<ResumedFrom> ResumedFromStart(const nlohmann::json& start);

// The summary from an end event. mean_step_ms = train_ms / (steps - untimed_steps) when that is
// positive (untimed_steps: the config knob; nullopt when unknown leaves mean_step_ms unset).
v1::RunSummary SummaryFromEnd(const nlohmann::json& end, std::optional<int64_t> untimed_steps);

// What the worker knows when the trainer has exited.
struct ExitFacts {
  int exit_code = 0;         // 128 + signal when killed by a signal
  bool signaled = false;
  bool cancel_requested = false;  // the worker asked it to stop
  std::optional<std::string> end_status;  // end.status, when an end event was seen
  std::string last_error;                 // message of the last error event
};

struct ExitVerdict {
  std::string status;  // "ok", "cancelled", "nan" or "failed" (worker.proto RunFinished.status)
  std::string error;   // "" for ok and cancelled
};

ExitVerdict ClassifyExit(const ExitFacts& facts);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_TRAINER_EVENTS_H_
