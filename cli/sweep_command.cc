// `ablate sweep ID`: one sweep's settings, counts, variants, run order and checkpoints.
#include <iostream>
#include <optional>

#include "cli/command_text.h"
#include "cli/commands.h"
#include "cli/sweep_text.h"
#include "cli/table.h"
#include "common/printable_text.h"

namespace ablate {

namespace {

// The settings and progress of a sweep this cluster runs.
void PrintOwnHeader(const v1::Sweep& sw) {
  const v1::RunCounts& n = sw.counts();
  std::cout << "sweep " << sw.id() << " '" << sw.name() << "'  " << StateName(sw.state()) << "\n"
            << "  baseline: " << BaselineText(sw) << "\n"
            << "  target val loss " << sw.target_val_loss() << ", " << SeedsText(sw)
            << " per variant, " << sw.gpus_per_run() << " GPUs per run (0 = CPU)\n"
            << "  priority " << sw.priority() << ", max concurrent "
            << (sw.max_concurrent() ? std::to_string(sw.max_concurrent()) : "unlimited")
            << ", max attempts " << sw.max_attempts() << ", tags "
            << (sw.tags().empty() ? "-" : TerminalSafe(Join(sw.tags()))) << "\n"
            << "  runs: " << n.total() << " total, " << n.queued() << " queued, "
            << n.assigned() + n.running() << " running, " << n.succeeded() << " succeeded, "
            << n.failed() << " failed, " << n.cancelled() << " cancelled\n";
  for (const std::string& why : sw.waiting_reasons()) std::cout << "  waiting: " << why << "\n";
  std::cout << "  created " << FormatTimestampMs(sw.created_ms()) << ", finished "
            << FormatTimestampMs(sw.finished_ms()) << "\n\n";
}

}  // namespace

int SweepCommand(Client& c, int64_t id) {
  v1::GetSweepRequest req;
  req.set_id(id);
  v1::Sweep sw;
  if (std::optional<int> done =
          c.Call(&Client::Stub::GetSweep, req, &sw, "sweep " + std::to_string(id))) {
    return *done;
  }
  const v1::RunCounts& n = sw.counts();
  if (sw.imported()) {
    std::cout << "sweep " << sw.id() << " '" << sw.name() << "'  imported from record logs: its "
              << n.total() << " runs ran elsewhere, one per log; hardware "
              << (sw.imported_hardware().empty() ? "not said"
                                                 : "'" + TerminalSafe(sw.imported_hardware()) +
                                                       "' (as the importer said)")
              << ", target val loss " << sw.target_val_loss() << "\n"
              << "  imported " << FormatTimestampMs(sw.created_ms()) << "; its logs: ablate runs "
              << "--sweep " << sw.id() << "; beside a sweep of yours: ablate compare SWEEP --with "
              << sw.id() << "\n\n";
  } else {
    PrintOwnHeader(sw);
  }
  Table t({"#", "VARIANT", "HASH", "DIFF VS BASELINE"});
  for (const v1::Variant& v : sw.variants()) {
    t.AddRow({std::to_string(v.index()), v.name(), v.config_hash().substr(0, 12), DiffSummary(v)});
  }
  t.Print(std::cout);
  if (sw.imported()) return kExitOk;  // nothing of it is dispatched or checkpointed
  PrintRunOrder(sw, std::cout);
  PrintCheckpoints(sw, std::cout);
  return kExitOk;
}

}  // namespace ablate
