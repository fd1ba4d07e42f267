// `ablate run ID`: one run's summary, attempts, stderr tail, config and script.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "cli/command_text.h"
#include "cli/commands.h"
#include "cli/script_upload.h"
#include "cli/table.h"
#include "common/printable_text.h"

namespace ablate {
namespace {

using nlohmann::json;

// The last `n` lines of `text`.
std::string LastLines(const std::string& text, int n) {
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int i = 0; i < n && pos != std::string::npos && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

// A script run (issue 14): the snapshot it ran, by hash, and its variant's changes against the
// baseline with the unified diff of a changed script.
void PrintScript(Client& c, const v1::Run& r) {
  json config = json::parse(r.config_json(), nullptr, false);
  if (!config.is_object() || !config.contains("script") || !config["script"].is_object()) return;
  const json& s = config["script"];
  std::cout << "script: " << s.value("path", "") << " (snapshot sha256 " << s.value("snapshot", "")
            << "), launch " << s.value("launch", "") << "\n";
  v1::GetSweepRequest req;
  req.set_id(r.sweep_id());
  v1::Sweep sw;
  if (!c.stub().GetSweep(c.Context().get(), req, &sw).ok()) return;
  for (const v1::Variant& v : sw.variants()) {
    if (v.id() != r.variant_id()) continue;
    std::cout << "diff vs baseline: " << DiffSummary(v) << "\n";
    std::string text = ScriptDiffText(v.diff_json());
    if (!text.empty()) std::cout << text << (text.back() == '\n' ? "" : "\n");
  }
}

}  // namespace

int RunCommand(Client& c, int64_t id) {
  v1::GetRunRequest req;
  req.set_id(id);
  v1::Run r;
  if (std::optional<int> done =
          c.Call(&Client::Stub::GetRun, req, &r, "run " + std::to_string(id))) {
    return *done;
  }
  const v1::RunSummary& sum = r.summary();
  std::cout << "run " << r.id() << " of sweep " << r.sweep_id() << ": variant '" << r.variant_name()
            << "', seed " << r.seed() << ", " << StateName(r.state()) << "\n"
            << "  steps " << sum.steps() << ", final val loss "
            << OptDouble(sum.has_final_val_loss(), sum.final_val_loss(), 4) << ", time to target "
            << (sum.has_time_to_target_ms() ? FormatDurationMs(sum.time_to_target_ms()) : "-")
            << ", mean step " << OptDouble(sum.has_mean_step_ms(), sum.mean_step_ms(), 1)
            << " ms\n";
  if (r.has_imported()) {
    const v1::ImportedLog& log = r.imported();
    std::cout << "  imported from record log " << TerminalSafe(log.file_name()) << " (sha256 "
              << log.log_sha256().substr(0, 16) << "...): ran elsewhere, on "
              << (log.logged_hardware().empty() ? "hardware its log does not name"
                                                : TerminalSafe(log.logged_hardware()) +
                                                      " as its log says")
              << "; " << log.total_steps() << " steps planned"
              << (log.timed_from_step() > 0
                      ? ", its clock started at step " + std::to_string(log.timed_from_step())
                      : "")
              << "\n";
  }
  if (!r.error().empty()) std::cout << "  error: " << TerminalSafe(r.error()) << "\n";
  if (!r.attempts().empty()) {
    std::cout << "\n";
    Table t({"ATTEMPT", "WORKER", "SLURM_JOB", "STATE", "RESUMED", "EXIT", "STARTED", "FINISHED",
             "ERROR"});
    for (const v1::Attempt& a : r.attempts()) {
      std::string job = a.slurm_job_id() ? std::to_string(a.slurm_job_id()) : "-";
      if (!a.slurm_step_id().empty()) job += "." + a.slurm_step_id();
      std::string resumed =
          a.has_resumed_from_step() ? "step " + std::to_string(a.resumed_from_step()) : "-";
      t.AddRow({std::to_string(a.number()), a.worker_id(), job, a.state(), resumed,
                std::to_string(a.exit_code()), FormatTimestampMs(a.started_ms()),
                FormatTimestampMs(a.finished_ms()), a.error().empty() ? "-" : a.error()});
    }
    t.Print(std::cout);
    const std::string& tail = r.attempts(r.attempts_size() - 1).stderr_tail();
    if (!tail.empty()) {
      std::cout << "\nstderr of the last attempt (tail):\n";
      std::string last = LastLines(tail, 40);
      if (!last.empty() && last.back() == '\n') last.pop_back();
      for (size_t at = 0; at <= last.size();) {  // control characters escaped, line by line
        size_t end = std::min(last.find('\n', at), last.size());
        std::cout << TerminalSafe(std::string_view(last).substr(at, end - at)) << "\n";
        at = end + 1;
      }
    }
  }
  std::cout << "\nconfig: " << r.config_json() << "\n";
  PrintScript(c, r);
  return kExitOk;
}

}  // namespace ablate
