// `ablate runs`: runs with their summaries, and why queued ones wait.
#include <iostream>
#include <optional>

#include "cli/command_text.h"
#include "cli/commands.h"
#include "cli/table.h"

namespace ablate {
namespace {

void PrintRuns(const google::protobuf::RepeatedPtrField<v1::Run>& runs) {
  Table t({"RUN", "SWEEP", "VARIANT", "SEED", "STATE", "TRIES", "WORKER", "STEPS", "VAL_LOSS",
           "TIME_TO_TARGET"});
  for (const v1::Run& r : runs) {
    const v1::RunSummary& s = r.summary();
    t.AddRow({std::to_string(r.id()), std::to_string(r.sweep_id()), r.variant_name(),
              std::to_string(r.seed()), StateName(r.state()), std::to_string(r.attempts_used()),
              r.worker_id().empty() ? "-" : r.worker_id(), std::to_string(s.steps()),
              OptDouble(s.has_final_val_loss(), s.final_val_loss(), 4),
              s.has_time_to_target_ms() ? FormatDurationMs(s.time_to_target_ms())
                                        : (s.has_final_val_loss() ? "not reached" : "-")});
  }
  t.Print(std::cout);
}

// Under `ablate runs --sweep N` with queued runs: why they wait, as `ablate sweep` says it (an
// "unschedulable: ..." reason above all: those runs cannot start on the connected workers).
void PrintWaiting(Client& c, int64_t sweep_id, const v1::ListRunsResponse& runs) {
  bool queued = false;
  for (const v1::Run& r : runs.runs()) queued = queued || r.state() == v1::RUN_QUEUED;
  if (sweep_id <= 0 || !queued) return;
  v1::GetSweepRequest req;
  req.set_id(sweep_id);
  v1::Sweep sw;
  if (!c.stub().GetSweep(c.Context().get(), req, &sw).ok()) return;
  for (const std::string& why : sw.waiting_reasons()) std::cout << "waiting: " << why << "\n";
}

}  // namespace

int RunsCommand(Client& c, int64_t sweep_id, const std::string& state) {
  v1::ListRunsRequest req;
  req.set_sweep_id(sweep_id);
  if (!state.empty()) {
    v1::RunState st;
    if (!ParseState<v1::RunState>(state, &st, v1::RunState_Parse, "RUN_")) {
      std::cerr << "ablate: unknown run state '" << state
                << "'; expected queued, assigned, running, succeeded, failed or cancelled\n";
      return kExitUsage;
    }
    req.set_state(st);
  }
  v1::ListRunsResponse resp;
  if (std::optional<int> done = c.Call(&Client::Stub::ListRuns, req, &resp, "listing runs")) {
    return *done;
  }
  if (resp.runs().empty()) {
    std::cout << "no runs match\n";
    return kExitOk;
  }
  PrintRuns(resp.runs());
  PrintWaiting(c, sweep_id, resp);
  return kExitOk;
}

}  // namespace ablate
