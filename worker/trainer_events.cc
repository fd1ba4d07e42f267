// Field names follow trainer/train/rank_runner.cc (EmitStep, Evaluate, EmitEnd) and the exit codes
// of trainer/tools/ablate_train_main.cc.
#include "worker/trainer_events.h"

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ablate::worker {
namespace {

using J = nlohmann::json;

constexpr int kExitDiverged = 3;

std::optional<double> Num(const J& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// An integer: a JSON integer that fits int64, or a whole float within it (a Python script may
// print 2.0); anything else (1e30, 2.5, a string) is absent rather than cast out of range.
std::optional<int64_t> Int(const J& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (!(d >= -9.2e18 && d <= 9.2e18) || d != std::floor(d)) return std::nullopt;
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

EventKind KindOf(const std::string& name) {
  if (name == "start") return EventKind::kStart;
  if (name == "step") return EventKind::kStep;
  if (name == "val") return EventKind::kVal;
  if (name == "end") return EventKind::kEnd;
  if (name == "error") return EventKind::kError;
  return EventKind::kOther;
}

std::string DescribeExit(const ExitFacts& f) {
  if (f.signaled) {
    int sig = f.exit_code - 128;
    const char* name = sigabbrev_np(sig);
    return "killed by signal " + (name ? std::string("SIG") + name : std::to_string(sig));
  }
  return "exit code " + std::to_string(f.exit_code);
}

}  // namespace

std::optional<TrainerEvent> ParseTrainerEvent(const std::string& line) {
  J body = J::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return std::nullopt;
  auto it = body.find("event");
  if (it == body.end() || !it->is_string()) return std::nullopt;
  TrainerEvent event{KindOf(it->get<std::string>()), std::move(body)};
  return event;
}

std::optional<v1::MetricPoint> PointFromEvent(const TrainerEvent& event) {
  const J& j = event.body;
  const std::optional<int64_t> step = Int(j, "step");
  if (!step || *step < 0) return std::nullopt;
  v1::MetricPoint p;
  p.set_step(*step);
  if (event.kind == EventKind::kVal) {
    if (auto v = Num(j, "val_loss")) p.set_val_loss(*v);
    return p;
  }
  if (auto v = Num(j, "train_loss")) p.set_train_loss(*v);
  if (auto v = Num(j, "lr")) p.set_lr(*v);
  if (auto v = Num(j, "step_ms")) p.set_step_ms(*v);
  if (auto v = Num(j, "train_ms")) p.set_train_time_ms(*v);
  if (auto v = Int(j, "tokens")) p.set_tokens(*v);
  return p;
}

std::optional<ResumedFrom> ResumedFromStart(const J& start) {
  auto it = start.find("resumed_from");
  if (it == start.end() || !it->is_object()) return std::nullopt;
  std::optional<int64_t> step = Int(*it, "step");
  if (!step) return std::nullopt;
  auto path = it->find("path");
  return ResumedFrom{*step, path != it->end() && path->is_string() ? path->get<std::string>() : ""};
}

v1::RunSummary SummaryFromEnd(const J& end, std::optional<int64_t> untimed_steps) {
  v1::RunSummary s;
  if (auto v = Num(end, "final_val_loss")) s.set_final_val_loss(*v);
  if (auto v = Num(end, "time_to_target_ms")) s.set_time_to_target_ms(*v);
  if (auto v = Int(end, "target_step")) s.set_target_step(*v);
  s.set_reached_target(s.has_time_to_target_ms());
  s.set_steps(Int(end, "steps").value_or(0));
  std::optional<double> train_ms = Num(end, "train_ms");
  if (train_ms) s.set_train_time_ms(*train_ms);
  if (train_ms && untimed_steps) {
    int64_t timed = s.steps() - *untimed_steps;
    if (timed > 0) s.set_mean_step_ms(*train_ms / double(timed));
  }
  return s;
}

ExitVerdict ClassifyExit(const ExitFacts& f) {
  if (!f.signaled && f.exit_code == 0 && f.end_status == "ok") return {"ok", ""};
  if (f.cancel_requested) return {"cancelled", ""};
  if (!f.signaled && f.exit_code == 0 && f.end_status == "cancelled") return {"cancelled", ""};
  std::string why = f.last_error.empty() ? DescribeExit(f) : f.last_error;
  if (!f.signaled && f.exit_code == kExitDiverged) return {"nan", why};
  if (!f.signaled && f.exit_code == 0) return {"failed", "exited 0 without an end event"};
  if (!f.last_error.empty()) why += " (" + DescribeExit(f) + ")";
  return {"failed", why};
}

}  // namespace ablate::worker
