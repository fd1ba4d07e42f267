// `ablate pools`: the coordinator's pools (ListPools). A Slurm pool with each pilot allocation as
// the last squeue saw it: running or pending with Slurm's reason, nodes, time left, runs held or
// idle. An ssh pool with each host: its state, its worker, its last start and last error.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/table.h"

namespace ablate {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string TimeLeft(int64_t s) { return s < 0 ? "unlimited" : FormatDurationMs(s * 1000.0); }

// "running, 2 runs", "running, idle", "pending (Resources)".
std::string Activity(const v1::PoolAllocation& a) {
  if (a.state() == "PENDING") return "pending (" + a.reason() + ")";
  if (a.state() != "RUNNING") return a.state();
  return a.runs() > 0 ? "running, " + std::to_string(a.runs()) + " run(s)" : "running, idle";
}

// "up, 2 run(s)", "up, idle", "backoff (retry in 8 s)".
std::string HostActivity(const v1::PoolHost& h, int64_t now_ms) {
  if (h.state() == "up") {
    if (!h.connected()) return "up, connecting";
    return h.runs() > 0 ? "up, " + std::to_string(h.runs()) + " run(s)" : "up, idle";
  }
  if (h.state() == "backoff") {
    return "backoff (retry in " + FormatDurationMs(std::max<int64_t>(0, h.retry_ms() - now_ms)) +
           ")";
  }
  return h.state();
}

void PrintSshPool(const v1::Pool& p) {
  std::cout << "pool " << p.name() << " (ssh): " << p.hosts_size() << " host(s), "
            << p.gpus_per_node() << " GPUs per node\n";
  if (!p.error().empty()) std::cout << "  error: " << p.error() << "\n";
  const int64_t now = NowMs();
  Table t({"HOST", "STATE", "WORKER", "START", "LAST ERROR"});
  for (const v1::PoolHost& h : p.hosts()) {
    std::string start = "-";
    if (h.incarnation() > 0) {
      start = "#" + std::to_string(h.incarnation());
      if (h.last_start_ms() > 0) {
        start += " in " + FormatDurationMs(double(h.last_start_ms())) +
                 (h.last_start_copied() ? " (bundle copied)" : "");
      }
    }
    t.AddRow({h.host(), HostActivity(h, now), h.incarnation() > 0 ? h.worker_id() : "-", start,
              h.error().empty() ? "-" : h.error()});
  }
  t.Print(std::cout);
}

void PrintPool(const v1::Pool& p) {
  if (p.kind() == "ssh") return PrintSshPool(p);
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

int PoolsCommand(Client& c, const std::vector<std::string>& action) {
  if (!action.empty()) {
    if (action.size() < 2 ||
        (action[0] != "drain" && action[0] != "release" && action[0] != "resume")) {
      std::cerr << "ablate pools: expected `ablate pools drain|release|resume POOL [HOST]`\n";
      return kExitUsage;
    }
    v1::PoolActionRequest req;
    req.set_action(action[0]);
    req.set_pool(action[1]);
    if (action.size() > 2) req.set_host(action[2]);
    v1::PoolActionResponse resp;
    if (std::optional<int> done =
            c.Call(&Client::Stub::PoolAction, req, &resp, "pool " + action[1])) {
      return *done;
    }
    std::cout << resp.message() << "\n";
    return kExitOk;
  }
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
