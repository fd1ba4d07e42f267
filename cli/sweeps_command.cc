// `ablate sweeps`: sweeps, newest first, with their progress.
#include <iostream>
#include <optional>

#include "cli/command_text.h"
#include "cli/commands.h"
#include "cli/table.h"

namespace ablate {

int SweepsCommand(Client& c, const std::string& state, const std::string& tag, int limit) {
  v1::ListSweepsRequest req;
  if (!state.empty()) {
    v1::SweepState st;
    if (!ParseState<v1::SweepState>(state, &st, v1::SweepState_Parse, "SWEEP_")) {
      std::cerr << "ablate: unknown sweep state '" << state
                << "'; expected queued, running, succeeded, failed or cancelled\n";
      return kExitUsage;
    }
    req.set_state(st);
  }
  req.set_tag(tag);
  req.set_limit(limit);
  v1::ListSweepsResponse resp;
  if (std::optional<int> done = c.Call(&Client::Stub::ListSweeps, req, &resp, "listing sweeps")) {
    return *done;
  }
  if (resp.sweeps().empty()) {
    std::cout << "no sweeps yet; submit one with: ablate submit SPEC.yaml\n";
    return kExitOk;
  }
  Table t({"ID", "NAME", "STATE", "DONE", "RUNNING", "QUEUED", "FAILED", "PRESET", "SCALE", "TAGS",
           "CREATED"});
  for (const v1::Sweep& sw : resp.sweeps()) {
    const v1::RunCounts& n = sw.counts();
    // An imported sweep's runs ran elsewhere: its preset column says so instead.
    const std::string preset = sw.imported() ? "(imported)"
                               : sw.baseline_preset().empty() ? "-"
                                                              : sw.baseline_preset();
    t.AddRow({std::to_string(sw.id()), sw.name(), StateName(sw.state()), Progress(n),
              std::to_string(n.running() + n.assigned()), std::to_string(n.queued()),
              std::to_string(n.failed()), preset,
              sw.scale(), sw.tags().empty() ? "-" : Join(sw.tags()),
              FormatTimestampMs(sw.created_ms())});
  }
  t.Print(std::cout);
  return kExitOk;
}

}  // namespace ablate
