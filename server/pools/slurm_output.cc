// Parsers for squeue, sacct and sbatch output, and Slurm's time format.
#include "server/pools/slurm_output.h"

#include <charconv>
#include <cstdio>
#include <sstream>


namespace ablate {
namespace {

// `s` cut at every `sep` (Debian's abseil takes absl::string_view, not std::string_view).
std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t start = 0;;) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos
                                                                  : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::optional<int64_t> ToInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::string_view line : Split(text, '\n')) {
    if (!TrimView(line).empty()) out.push_back(line);
  }
  return out;
}

absl::Status LineError(const char* what, size_t line_no, std::string_view line,
                       const std::string& problem) {
  return absl::InvalidArgumentError(std::string(what) + " output line " +
                                    std::to_string(line_no) + " ('" + std::string(line) +
                                    "'): " + problem);
}

absl::StatusOr<SlurmJob> SqueueLine(std::string_view line, size_t n) {
  std::vector<std::string_view> f = Split(line, '|');
  // Every field ends with '|' (the ":|" suffix), so there is one empty field after the last.
  if (f.size() < 10) return LineError("squeue", n, line, "expected 10 fields");
  SlurmJob job;
  std::optional<int64_t> id = ToInt(f[0]);
  std::optional<int64_t> nodes = ToInt(f[3]);
  std::optional<int64_t> restarts = ToInt(f[8]);
  if (!id) return LineError("squeue", n, line, "job id '" + std::string(f[0]) + "' is not a number");
  if (!nodes || !restarts) return LineError("squeue", n, line, "node or restart count not a number");
  job.id = *id;
  job.state = std::string(f[1]);
  job.reason = std::string(f[2]);
  job.nodes = static_cast<int>(*nodes);
  job.time_left_s = SlurmTimeLeftSeconds(f[4]);
  job.node_list = std::string(f[5]);
  job.name = std::string(f[6]);
  job.comment = f[7] == "(null)" ? "" : std::string(f[7]);
  job.restart_count = static_cast<int>(*restarts);
  job.partition = std::string(f[9]);
  return job;
}

}  // namespace

std::vector<std::string> SqueueArgs(const std::string& job_name) {
  return {"squeue", "-h", "--name=" + job_name, "-O", kSqueueFormat};
}

std::vector<std::string> SacctArgs(const std::vector<int64_t>& job_ids) {
  std::string ids;
  for (int64_t id : job_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  return {"sacct", "-n", "-P", "-X", "-j", ids, "-o", "JobID,State,ExitCode"};
}

absl::StatusOr<std::vector<SlurmJob>> ParseSqueue(std::string_view text) {
  std::vector<SlurmJob> jobs;
  size_t n = 0;
  for (std::string_view line : Lines(text)) {
    absl::StatusOr<SlurmJob> job = SqueueLine(TrimView(line), ++n);
    if (!job.ok()) return job.status();
    jobs.push_back(*std::move(job));
  }
  return jobs;
}

absl::StatusOr<std::map<int64_t, std::string>> ParseSacct(std::string_view text) {
  std::map<int64_t, std::string> states;
  size_t n = 0;
  for (std::string_view line : Lines(text)) {
    ++n;
    std::vector<std::string_view> f = Split(TrimView(line), '|');
    if (f.size() < 2) return LineError("sacct", n, line, "expected JobID|State|ExitCode");
    std::optional<int64_t> id = ToInt(f[0]);
    if (!id) continue;  // "12.batch", "12.0", "12_3": steps and array tasks
    std::string_view state = f[1];
    state = state.substr(0, state.find(' '));  // "CANCELLED by 0"
    states[*id] = std::string(state);
  }
  return states;
}

bool AccountingDisabled(std::string_view sacct_stderr) {
  return sacct_stderr.find("accounting storage is disabled") != std::string_view::npos;
}

absl::StatusOr<int64_t> ParseSbatchJobId(std::string_view text) {
  std::string_view t = TrimView(text);
  std::optional<int64_t> id = ToInt(t.substr(0, t.find(';')));
  if (!id || *id <= 0) {
    return absl::InternalError("sbatch --parsable printed '" + std::string(t) +
                               "', not a job id");
  }
  return *id;
}

absl::StatusOr<int64_t> ParseSlurmTimeSeconds(std::string_view text) {
  std::string_view t = TrimView(text);
  int64_t days = 0;
  bool has_days = false;
  if (size_t dash = t.find('-'); dash != std::string_view::npos) {
    std::optional<int64_t> d = ToInt(t.substr(0, dash));
    if (!d) return absl::InvalidArgumentError("'" + std::string(text) + "' is not a Slurm time");
    days = *d, has_days = true;
    t = t.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  for (std::string_view p : Split(t, ':')) {
    std::optional<int64_t> v = ToInt(p);
    if (!v || *v < 0) {
      return absl::InvalidArgumentError("'" + std::string(text) +
                                        "' is not a Slurm time (e.g. 90, 2:00:00, 1-12:00:00)");
    }
    parts.push_back(*v);
  }
  if (parts.empty() || parts.size() > 3) {
    return absl::InvalidArgumentError("'" + std::string(text) + "' is not a Slurm time");
  }
  int64_t h = 0, m = 0, s = 0;
  if (has_days) {  // days-hours[:minutes[:seconds]]
    h = parts[0], m = parts.size() > 1 ? parts[1] : 0, s = parts.size() > 2 ? parts[2] : 0;
  } else if (parts.size() == 1) {  // minutes
    m = parts[0];
  } else if (parts.size() == 2) {  // minutes:seconds
    m = parts[0], s = parts[1];
  } else {  // hours:minutes:seconds
    h = parts[0], m = parts[1], s = parts[2];
  }
  return ((days * 24 + h) * 60 + m) * 60 + s;
}

std::optional<int64_t> SlurmTimeLeftSeconds(std::string_view text) {
  absl::StatusOr<int64_t> s = ParseSlurmTimeSeconds(text);
  if (!s.ok()) return std::nullopt;  // UNLIMITED, NOT_SET, INVALID
  return *s;
}

std::string FormatSlurmTime(int64_t seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld",
                static_cast<long long>(seconds / 86400),
                static_cast<long long>(seconds / 3600 % 24),
                static_cast<long long>(seconds / 60 % 60), static_cast<long long>(seconds % 60));
  return buf;
}

std::string FormatPilotTag(const PilotTag& tag) {
  return "ablate coordinator=" + tag.coordinator + " pool=" + tag.pool +
         " nodes=" + std::to_string(tag.nodes) + " sweep=" + std::to_string(tag.sweep_id);
}

std::optional<PilotTag> ParsePilotTag(std::string_view comment) {
  std::vector<std::string_view> words = Split(TrimView(comment), ' ');
  if (words.empty() || words[0] != "ablate") return std::nullopt;
  PilotTag tag;
  for (size_t i = 1; i < words.size(); ++i) {
    std::string_view w = words[i];
    size_t eq = w.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string_view key = w.substr(0, eq), value = w.substr(eq + 1);
    if (key == "coordinator") {
      tag.coordinator = std::string(value);
    } else if (key == "pool") {
      tag.pool = std::string(value);
    } else if (key == "nodes" || key == "sweep") {
      std::optional<int64_t> v = ToInt(value);
      if (!v) return std::nullopt;
      if (key == "nodes") tag.nodes = static_cast<int>(*v);
      else tag.sweep_id = *v;
    }
  }
  if (tag.coordinator.empty() || tag.pool.empty() || tag.nodes < 1) return std::nullopt;
  return tag;
}

}  // namespace ablate
