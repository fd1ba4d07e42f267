// One pass over the lines: find the script's end, then read every line that starts with "step:"
// strictly. Only the output part is read for steps, so the script's own print statements (which
// are indented or inside f-strings anyway) never count.
#include "common/record_log.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ablate {
namespace {

// Clock resets happen at step 10 in every 2024 log; a drop later than this is not one.
constexpr int64_t kLatestClockReset = 50;

bool IsSeparator(std::string_view line) {
  if (line.size() < 50) return false;
  for (char ch : line) {
    if (ch != '=') return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The whole of `s` as a finite number.
std::optional<double> Finite(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> Count(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// A value shown in a message: at most 40 bytes of it, printable ASCII only.
std::string Shown(std::string_view s) {
  std::string out;
  for (char ch : s.substr(0, 40)) out += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  if (s.size() > 40) out += "...";
  return out;
}

// nvidia-smi's GPU row: "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:61:00.0 Off |".
std::optional<std::string> GpuName(std::string_view line) {
  if (!line.starts_with("|")) return std::nullopt;
  std::string_view rest = Trim(line.substr(1));
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0 || digits > 3 || digits >= rest.size() || rest[digits] != ' ') {
    return std::nullopt;
  }
  std::string_view cell = rest.substr(digits, rest.find('|') - digits);
  cell = Trim(cell);
  for (std::string_view mode : {" On", " Off"}) {
    if (cell.ends_with(mode)) {
      std::string_view name = Trim(cell.substr(0, cell.size() - mode.size()));
      if (name.empty() || name.size() > 64) return std::nullopt;
      return std::string(name);
    }
  }
  return std::nullopt;
}

absl::Status LineError(std::string_view file, int line, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(file), ":", line, ": ", std::string(what)));
}

struct StepLine {
  int64_t step = 0, total = 0;
  RecordLogPoint point;
  bool seconds = false;
};

// Reads "step:K/N key:value ...". Errors name the field.
absl::StatusOr<StepLine> ReadStepLine(std::string_view text, std::string_view file, int line) {
  StepLine out;
  out.point.line = line;
  bool first = true;
  text = Trim(text);
  while (!text.empty()) {
    size_t space = text.find_first_of(" \t");
    std::string_view field = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : Trim(text.substr(space));
    size_t colon = field.find(':');
    if (colon == std::string_view::npos) {
      return LineError(file, line, absl::StrCat("'", Shown(field),
                                                "' is not a key:value field (a cut line?)"));
    }
    std::string_view key = field.substr(0, colon), value = field.substr(colon + 1);
    if (first) {
      size_t slash = value.find('/');
      std::optional<int64_t> k = Count(value.substr(0, slash));
      std::optional<int64_t> n =
          slash == std::string_view::npos ? std::nullopt : Count(value.substr(slash + 1));
      if (!k || !n || *n == 0 || *k > *n) {
        return LineError(file, line, absl::StrCat("'", Shown(field), "' is not step:K/N"));
      }
      out.step = *k, out.total = *n;
      out.point.step = *k;
      first = false;
    } else if (key == "val_loss" || key == "train_loss") {
      std::optional<double> v = Finite(value);
      if (!v) {
        return LineError(file, line, absl::StrCat(std::string(key), " '", Shown(value),
                                                  "' is not a finite number"));
      }
      (key == "val_loss" ? out.point.val_loss : out.point.train_loss) = *v;
    } else if (key == "train_time") {
      double scale = 0;
      std::string_view digits;
      if (value.ends_with("ms")) {
        scale = 1, digits = value.substr(0, value.size() - 2);
      } else if (value.ends_with("s")) {
        scale = 1000, digits = value.substr(0, value.size() - 1), out.seconds = true;
      }
      std::optional<double> v = scale > 0 ? Finite(digits) : std::nullopt;
      if (!v || *v < 0) {
        return LineError(file, line, absl::StrCat("train_time '", Shown(value),
                                                  "' is not a time in ms or s"));
      }
      out.point.train_time_ms = *v * scale;
    }  // step_avg ("nanms" early) and extra fields are not read
  }
  if (out.point.val_loss) out.point.train_loss.reset();  // a val line is not a step
  return out;
}

}  // namespace

double RecordLog::mean_step_ms() const {
  int64_t timed = final_step - timed_from_step;
  return timed > 0 ? final_train_time_ms / static_cast<double>(timed) : 0;
}

std::string RecordLog::LoggedHardware() const {
  std::vector<std::pair<std::string, int>> counts;  // first-seen order
  for (const std::string& name : logged_gpus) {
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == name; });
    if (it == counts.end()) {
      counts.push_back({name, 1});
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [name, n] : counts) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", n, "x ", name);
  }
  return out;
}

absl::StatusOr<RecordLog> ParseRecordLog(std::string_view text, std::string_view file,
                                         double target) {
  if (static_cast<int64_t>(text.size()) > kMaxRecordLogBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %d bytes, more than the %d MiB a record log may hold", file, text.size(),
        kMaxRecordLogBytes >> 20));
  }
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  RecordLog log;
  log.lines = static_cast<int>(lines.size());
  // The script: after an opening separator (2024-10/11) up to the next one, or from the top.
  size_t script_begin = 0, output_begin = 0;
  if (!lines.empty() && IsSeparator(Trim(lines[0]))) script_begin = 1;
  for (size_t i = script_begin; i < lines.size(); ++i) {
    if (IsSeparator(Trim(lines[i]))) {
      size_t begin_byte = script_begin == 0 ? 0 : lines[0].size() + 1;
      size_t end_byte = static_cast<size_t>(lines[i].data() - text.data());
      log.script = std::string(text.substr(begin_byte, end_byte - begin_byte));
      output_begin = i + 1;
      break;
    }
  }
  bool reset_seen = false;
  std::optional<RecordLogPoint> last_train, last_val;
  std::optional<double> last_time;
  int last_time_line = 0;
  int64_t last_step = -1;
  bool first_step_line = true;
  for (size_t i = output_begin; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    std::string_view line = lines[i];
    if (std::optional<std::string> gpu = GpuName(line); gpu && log.points.empty()) {
      if (log.logged_gpus.size() < 1024) log.logged_gpus.push_back(*gpu);
      continue;
    }
    if (!line.starts_with("step:")) continue;
    absl::StatusOr<StepLine> s = ReadStepLine(line, file, line_no);
    if (!s.ok()) return s.status();
    if (first_step_line) {
      log.total_steps = s->total;
      log.seconds = s->seconds;
      first_step_line = false;
    } else if (s->total != log.total_steps) {
      return LineError(file, line_no, absl::StrCat("step:", s->step, "/", s->total, " after step:",
                                                   last_step, "/", log.total_steps,
                                                   ": a second run in the same file? Split it "
                                                   "into one log per run"));
    }
    RecordLogPoint& p = s->point;
    const bool is_val = p.val_loss.has_value();
    const std::optional<RecordLogPoint>& same_kind = is_val ? last_val : last_train;
    // A validation may follow the train line of its step (both print step:K, in that order in
    // every record); nothing else may repeat or go back.
    if (p.step < last_step || (p.step == last_step && !is_val) ||
        (same_kind && p.step <= same_kind->step)) {
      return LineError(file, line_no,
                       absl::StrCat("step ", p.step, " comes after step ", last_step,
                                    p.step == 0 ? ": a second run in the same file? Split it "
                                                  "into one log per run"
                                                : ": steps out of order"));
    }
    if (p.train_time_ms && last_time && *p.train_time_ms < *last_time) {
      if (reset_seen || last_step > kLatestClockReset) {
        return LineError(file, line_no, absl::StrFormat(
            "train_time goes back from %.0fms (line %d) to %.0fms", *last_time,
            last_time_line, *p.train_time_ms));
      }
      // The 2024 reset: what came before was compile time.
      reset_seen = true;
      log.timed_from_step = last_step;
      for (RecordLogPoint& q : log.points) q.train_time_ms.reset();
    }
    if (p.train_time_ms) last_time = p.train_time_ms, last_time_line = line_no;
    last_step = p.step;
    (is_val ? last_val : last_train) = p;
    log.points.push_back(p);
  }
  if (log.points.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(file), ": not a modded-nanogpt record log (no line starts with step:K/N)"));
  }
  // Complete: the last step line is a validation, at step N or (stopped at the target) earlier.
  const bool ends_on_val = last_val && log.points.back().line == last_val->line;
  const bool stopped_at_target = ends_on_val && *last_val->val_loss <= target;
  if (!last_val || (last_val->step != log.total_steps && !stopped_at_target)) {
    return LineError(file, log.lines,
                     absl::StrCat("no validation at the last step ", log.total_steps, "/",
                                  log.total_steps, " and no stop at the target ",
                                  absl::StrFormat("%g", target), " (the last validation is ",
                                  last_val ? absl::StrFormat("at step %d: %g", last_val->step,
                                                             *last_val->val_loss)
                                           : std::string("none"),
                                  "): a truncated log?"));
  }
  if (!last_val->train_time_ms) {
    return LineError(file, last_val->line, "the final validation has no train_time");
  }
  log.final_val_loss = *last_val->val_loss;
  log.final_step = last_val->step;
  log.final_train_time_ms = *last_val->train_time_ms;
  return log;
}

std::optional<TargetHit> TimeToTarget(const RecordLog& log, double target) {
  for (const RecordLogPoint& p : log.points) {
    if (p.val_loss && *p.val_loss <= target) {
      if (!p.train_time_ms) return std::nullopt;
      return TargetHit{p.step, *p.train_time_ms};
    }
  }
  return std::nullopt;
}

}  // namespace ablate
