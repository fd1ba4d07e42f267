// Line classification for script stdout: cheap prefix checks first, so that a long line of
// garbage costs one scan and never a JSON parse unless it starts like an object.
#include "worker/script_output.h"

#include <charconv>
#include <cmath>

#include "worker/trainer_events.h"

namespace ablate::worker {
namespace {

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The whole of `s` as a number (from_chars accepts "nan" and "inf" too); nullopt otherwise.
std::optional<double> Number(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> Integer(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// "16234ms" -> 16234; "2150.483s" -> 2150483 (track 3's logs print seconds); "nanms" ->
// nullopt (printed before timing starts).
std::optional<double> Millis(std::string_view s) {
  double scale = 1;
  if (s.ends_with("ms")) {
    s.remove_suffix(2);
  } else if (s.ends_with("s")) {
    s.remove_suffix(1), scale = 1000;
  } else {
    return std::nullopt;
  }
  std::optional<double> v = Number(s);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return *v * scale;
}

// "125/1393" or "125" -> 125.
std::optional<int64_t> StepOf(std::string_view s) {
  return Integer(s.substr(0, s.find('/')));
}

// torchrun's tee prefixes each rank's lines with "[<role><local rank>]:" (e.g. "[default0]:").
// Strips it; `rank` gets the local rank, or -1 when there is no prefix.
std::string_view StripRankPrefix(std::string_view line, int* rank) {
  *rank = -1;
  if (!line.starts_with("[")) return line;
  size_t close = line.find("]:");
  if (close == std::string_view::npos || close > 64) return line;
  size_t digits = close;
  while (digits > 1 && line[digits - 1] >= '0' && line[digits - 1] <= '9') --digits;
  if (digits == close) return line;
  std::optional<int64_t> r = Integer(line.substr(digits, close - digits));
  if (!r || *r > 1000000) return line;
  *rank = static_cast<int>(*r);
  return line.substr(close + 2);
}

}  // namespace

std::optional<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "auto") return LogFormat::kAuto;
  if (name == "modded-nanogpt") return LogFormat::kModdedNanogpt;
  if (name == "ablate-events") return LogFormat::kAblateEvents;
  return std::nullopt;
}

std::string_view LogFormatName(LogFormat format) {
  switch (format) {
    case LogFormat::kAuto: return "auto";
    case LogFormat::kModdedNanogpt: return "modded-nanogpt";
    case LogFormat::kAblateEvents: return "ablate-events";
  }
  return "auto";
}

std::optional<NanogptLine> ParseNanogptLine(std::string_view line) {
  line = TrimSpace(line);
  if (!line.starts_with("step:")) return std::nullopt;
  NanogptLine out;
  bool first = true, said_something = false;
  while (!line.empty()) {
    size_t space = line.find_first_of(" \t");
    std::string_view field = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view() : TrimSpace(line.substr(space));
    size_t colon = field.find(':');
    std::string_view key = field.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : field.substr(colon + 1);
    if (first) {
      std::optional<int64_t> step = StepOf(value);
      if (!step) return std::nullopt;
      out.point.set_step(*step);
      first = false;
    } else if (key == "val_loss" || key == "train_loss") {
      std::optional<double> v = Number(value);
      if (!v) return std::nullopt;  // a field we know with a value we do not: not this format
      if (key == "val_loss") {
        out.point.set_val_loss(*v), out.is_val = true;
      } else {
        out.point.set_train_loss(*v);
      }
      said_something = true;
    } else if (key == "train_time") {
      std::optional<double> v = Millis(value);
      if (!v) return std::nullopt;
      out.point.set_train_time_ms(*v);
      said_something = true;
    } else if (key == "step_avg") {
      out.step_avg_ms = Millis(value);
    }  // extra fields (peak memory, lr, ...) are allowed and ignored
  }
  if (!said_something) return std::nullopt;
  if (out.is_val) out.point.clear_train_loss();  // a val line is an evaluation, not a step
  return out;
}

ScriptOutputParser::ScriptOutputParser(LogFormat format, std::optional<double> target_val_loss)
    : format_(format), target_(target_val_loss) {}

ScriptLine ScriptOutputParser::Parse(std::string_view raw) {
  int rank = -1;
  std::string_view line = TrimSpace(StripRankPrefix(TrimSpace(raw), &rank));
  ScriptLine out;
  if (rank > 0) return out;  // the curve is rank 0's
  if (format_ != LogFormat::kAblateEvents && line.starts_with("step:")) {
    if (std::optional<NanogptLine> n = ParseNanogptLine(line)) {
      Observe(&n->point);
      out.kind = ScriptLine::Kind::kPoint;
      out.point = std::move(n->point);
    }
    return out;
  }
  if (format_ == LogFormat::kModdedNanogpt || !line.starts_with("{")) return out;
  std::optional<TrainerEvent> event = ParseTrainerEvent(std::string(line));
  if (!event) return out;
  switch (event->kind) {
    case EventKind::kStep:
    case EventKind::kVal:
      if (std::optional<v1::MetricPoint> point = PointFromEvent(*event)) {
        out.kind = ScriptLine::Kind::kPoint;
        out.point = *std::move(point);
        Observe(&out.point);
      }
      break;
    case EventKind::kEnd:
      out.kind = ScriptLine::Kind::kEnd;
      end_summary_ = SummaryFromEnd(event->body, std::nullopt);
      break;
    case EventKind::kError:
      out.kind = ScriptLine::Kind::kError;
      if (auto it = event->body.find("message"); it != event->body.end() && it->is_string()) {
        out.message = it->get<std::string>();
      }
      break;
    default: break;
  }
  return out;
}

void ScriptOutputParser::Observe(v1::MetricPoint* point) {
  const v1::MetricPoint& p = *point;
  if (p.step() > summary_.steps()) summary_.set_steps(p.step());
  if (p.has_train_time_ms()) {
    // step_ms: the time between this point's train_time and the previous one's, per step.
    if (last_timed_step_ && p.step() > *last_timed_step_ && last_train_time_ms_ &&
        p.train_time_ms() >= *last_train_time_ms_) {
      point->set_step_ms((p.train_time_ms() - *last_train_time_ms_) /
                         double(p.step() - *last_timed_step_));
    }
    last_train_time_ms_ = p.train_time_ms();
    last_timed_step_ = p.step();
    summary_.set_train_time_ms(p.train_time_ms());
    if (p.step() > 0) summary_.set_mean_step_ms(p.train_time_ms() / double(p.step()));
  }
  if (p.has_train_loss() && !std::isfinite(p.train_loss())) non_finite_ = true;
  if (!p.has_val_loss()) return;
  ++val_points_;
  if (!std::isfinite(p.val_loss())) non_finite_ = true;
  summary_.set_final_val_loss(p.val_loss());
  // The speedrun's rule: the training time at the first evaluation at or below the target.
  if (target_ && !summary_.reached_target() && p.val_loss() <= *target_ && last_train_time_ms_) {
    summary_.set_reached_target(true);
    summary_.set_time_to_target_ms(*last_train_time_ms_);
    summary_.set_target_step(p.step());
  }
}

v1::RunSummary ScriptOutputParser::Summary() const {
  v1::RunSummary s = summary_;
  if (end_summary_) {
    v1::RunSummary end = *end_summary_;
    if (end.steps() == 0) end.clear_steps();  // absent from the event: keep the lines' count
    if (!end.reached_target()) end.clear_reached_target();
    // One ms/step for every script (script_output.h), whatever the end event says.
    if (s.has_mean_step_ms()) end.clear_mean_step_ms();
    s.MergeFrom(end);
  }
  return s;
}

ExitVerdict ClassifyScriptExit(const ScriptExitFacts& f) {
  const bool clean = !f.signaled && f.exit_code == 0;
  if (f.non_finite && !f.cancel_requested) {
    return {"nan", "the script printed a NaN or infinite loss"};
  }
  if (clean && (f.val_points > 0 || !f.val_lines_expected)) return {"ok", ""};
  if (f.cancel_requested) return {"cancelled", ""};
  if (clean) {
    return {"failed",
            "the script exited 0 without printing a single parseable val line (expected "
            "modded-nanogpt lines such as 'step:125/1393 val_loss:4.2618 train_time:16234ms "
            "step_avg:129.87ms' or ablate JSON events {\"event\":\"val\",...}); its output "
            "is in the tail below"};
  }
  std::string how = f.signaled ? "killed by signal " + std::to_string(f.exit_code - 128)
                               : "exit code " + std::to_string(f.exit_code);
  return {"failed", f.last_error.empty() ? "the script failed: " + how
                                         : f.last_error + " (" + how + ")"};
}

}  // namespace ablate::worker
