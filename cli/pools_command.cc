// `ablate pools`: the coordinator's Slurm pools and each pilot allocation as the last squeue saw
// it (ListPools): running or pending with Slurm's reason, nodes, time left, runs held or idle.
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/table.h"

namespace ablate {
namespace {

std::string TimeLeft(int64_t s) { return s < 0 ? "unlimited" : FormatDurationMs(s * 1000.0); }

// "running, 2 runs", "running, idle", "pending (Resources)".
std::string Activity(const v1::PoolAllocation& a) {
  if (a.state() == "PENDING") return "pending (" + a.reason() + ")";
  if (a.state() != "RUNNING") return a.state();
  return a.runs() > 0 ? "running, " + std::to_string(a.runs()) + " run(s)" : "running, idle";
}

void PrintPool(const v1::Pool& p) {
  std::cout << "pool " << p.name() << ": partition " << p.partition()
            << (p.account().empty() ? "" : ", account " + p.account()) << ", "
            << p.gpus_per_node() << " GPUs per node, at most " << p.max_nodes() << " node(s)\n";
  if (!p.error().empty()) std::cout << "  Slurm error: " << p.error() << "\n";
  if (p.polled_ms() == 0) std::cout << "  not polled yet\n";
  if (p.allocations().empty()) {
    std::cout << "  no allocations\n";
    return;
  }
  Table t({"JOB", "STATE", "NODES", "NODELIST", "TIME_LEFT", "SWEEP"});
  for (const v1::PoolAllocation& a : p.allocations()) {
    t.AddRow({std::to_string(a.job_id()), Activity(a), std::to_string(a.nodes()),
              a.node_list().empty() ? "-" : a.node_list(), TimeLeft(a.time_left_s()),
              a.sweep_id() ? std::to_string(a.sweep_id()) : "-"});
  }
  t.Print(std::cout);
}

}  // namespace

int PoolsCommand(Client& c) {
  v1::ListPoolsRequest req;
  v1::ListPoolsResponse resp;
  if (std::optional<int> done = c.Call(&Client::Stub::ListPools, req, &resp, "listing pools")) {
    return *done;
  }
  if (resp.pools().empty()) {
    std::cout << "this coordinator has no pools (start it with --pools FILE)\n";
    return kExitOk;
  }
  for (int i = 0; i < resp.pools_size(); ++i) {
    if (i > 0) std::cout << "\n";
    PrintPool(resp.pools(i));
  }
  return kExitOk;
}

}  // namespace ablate
