// `ablate workers`: worker nodes, their GPUs, allocations and heartbeats.
#include <iostream>
#include <optional>

#include "cli/command_text.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "common/clock.h"

namespace ablate {
namespace {

// A Slurm pilot's allocation: "pool h100, job 12, 1h05m left"; "-" outside Slurm.
std::string Allocation(const v1::Worker& w) {
  if (w.slurm_job_id() == 0) {
    return w.slurm_allocation().empty() ? "-" : "slurm " + w.slurm_allocation();
  }
  std::string out = w.slurm_pool().empty() ? "" : "pool " + w.slurm_pool() + ", ";
  out += "job " + std::to_string(w.slurm_job_id());
  if (w.slurm_time_left_s() >= 0) {
    out += ", " + FormatDurationMs(double(w.slurm_time_left_s()) * 1000) + " left";
  }
  return out;
}

}  // namespace

int WorkersCommand(Client& c) {
  v1::ListWorkersRequest req;
  v1::ListWorkersResponse resp;
  if (std::optional<int> done = c.Call(&Client::Stub::ListWorkers, req, &resp, "listing workers")) {
    return *done;
  }
  if (resp.workers().empty()) {
    std::cout << "no workers registered; start one with: ablate-worker --coordinator " << c.server()
              << "\n";
    return kExitOk;
  }
  int64_t now = SystemClock::Get().WallMs();
  Table t({"WORKER", "HOST", "GPUS", "CPU_SLOTS", "STATE", "ALLOCATION", "HEARTBEAT", "RUNS",
           "DATASETS"});
  for (const v1::Worker& w : resp.workers()) {
    std::string gpus = std::to_string(w.gpus_size());
    if (!w.gpus().empty()) gpus += "× " + w.gpus(0).model();
    std::string runs;
    for (int64_t r : w.run_ids()) runs += (runs.empty() ? "" : ",") + std::to_string(r);
    std::string state = w.connected() ? "connected" : "gone";
    if (w.draining()) state += ", draining";
    t.AddRow({w.id(), w.host(), gpus, std::to_string(w.cpu_slots()), state, Allocation(w),
              FormatAgeMs(w.last_heartbeat_ms() ? now - w.last_heartbeat_ms() : -1),
              runs.empty() ? "-" : runs, w.datasets().empty() ? "-" : Join(w.datasets())});
  }
  t.Print(std::cout);
  return kExitOk;
}

}  // namespace ablate
