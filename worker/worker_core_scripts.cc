// WorkerCore for script runs (issue 14): an Assignment whose config names a script is started on
// a thread of its own, because starting may wait (a snapshot fetch; node 1.. of a gang waits for
// node 0's torch rendezvous, which arrives on the connection's reader thread). Lock order as in
// worker_core.cc.
#include <unistd.h>

#include <filesystem>

#include "worker/datasets.h"
#include "worker/worker_core.h"
#include "worker/worker_core_attempt.h"

namespace ablate::worker {
namespace {

// How long node 1.. of a gang waits for node 0's rendezvous before the attempt fails.
constexpr absl::Duration kRendezvousWait = absl::Minutes(10);

std::string RunDirOf(const std::string& work_dir, const v1::Assignment& a) {
  return work_dir + "/runs/" + std::to_string(a.run_id()) + "-a" + std::to_string(a.attempt_id());
}

std::string Describe(const v1::Assignment& a) {
  return "run " + std::to_string(a.run_id()) + " attempt " + std::to_string(a.attempt_id());
}

std::string HostName() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "localhost";
}

}  // namespace

void WorkerCore::HandleScriptAssignment(const v1::Assignment& as) {
  if (!options_.allow_scripts) {
    // The coordinator never sends these to such a worker; an old coordinator might.
    FailToStart(as, absl::FailedPreconditionError(
                        "this worker does not run scripts (start ablate-worker with "
                        "--allow-scripts to let it run researchers' code)"));
    return;
  }
  if (as.checkpoint_every_ms() > 0) {
    LogLine("run " + std::to_string(as.run_id()) + " attempt " + std::to_string(as.attempt_id()) +
            ": checkpoint_every applies to the built-in trainer; a script keeps its own "
            "checkpoints");
  }
  auto a = std::make_shared<Attempt>(as, options_.batcher, mu_);
  a->script = true;
  Attempt* raw = a.get();
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || attempts_.count(as.attempt_id()) > 0) return;  // shutting down, or a repeat
    a->core_mu.AssertHeld();
    a->starting = true;
    if (auto it = early_ids_.find(as.attempt_id()); it != early_ids_.end()) {
      a->rendezvous = std::make_pair(it->second.master_addr(), it->second.master_port());
      early_ids_.erase(it);
    }
    attempts_[as.attempt_id()] = a;
    // Started under the lock: Shutdown joins `starter` only after taking this lock.
    a->starter = std::thread([this, raw] { StartScript(*raw); });
  }
}

void WorkerCore::StartScript(Attempt& a) {
  const v1::Assignment& as = a.assignment;
  absl::StatusOr<RunSpec> spec = PrepareScript(a);
  std::unique_ptr<RunSupervisor> supervisor;
  if (spec.ok()) {
    supervisor = std::make_unique<RunSupervisor>(
        *spec, RunCallbacks{[this, &a] { SendStarted(a); },
                            [this, &a](const v1::MetricPoint& p) { OnPoint(a, p); },
                            [this, &a](const RunResult& r) { OnExit(a, r); }});
  }
  bool aborted = false, stale = false;
  {
    absl::MutexLock lock(&mu_);
    a.core_mu.AssertHeld();
    stale = a.stale;
    aborted = a.start_cancelled || stopping_;
    if (spec.ok() && !aborted && !stale) a.supervisor = std::move(supervisor);
  }
  if (stale) {
    LogLine(Describe(as) + ": stale before it started; not started");
  } else if (!spec.ok()) {
    FailToStart(as, spec.status());
  } else if (aborted) {
    EndUnstarted(as, "cancelled", "");
  } else {
    LogLine(Describe(as) + ": starting " + spec->argv[0] + " for the script");
    if (absl::Status s = a.supervisor->Start(); !s.ok()) FailToStart(as, s);
  }
  bool cancel_now = false;
  std::chrono::milliseconds grace{0};
  {
    absl::MutexLock lock(&mu_);
    a.core_mu.AssertHeld();
    a.starting = false;
    cancel_now = a.start_cancelled && a.supervisor;
    grace = a.cancel_grace;
  }
  // A Cancel that came while Start() ran found no child yet: deliver it now.
  if (cancel_now) a.supervisor->Cancel(grace);
}

absl::StatusOr<RunSpec> WorkerCore::PrepareScript(Attempt& a) {
  const v1::Assignment& as = a.assignment;
  absl::StatusOr<ScriptConfig> config = ParseScriptConfig(as.config_json());
  if (!config.ok()) return config.status();
  bool fetched = false;
  absl::StatusOr<Snapshot> files = snapshots_.Get(config->snapshot, &fetched);
  if (!files.ok()) {
    return absl::Status(files.status().code(),
                        "snapshot " + config->snapshot + ": " + std::string(files.status().message()));
  }
  LogLine(Describe(as) + ": snapshot " + config->snapshot.substr(0, 12) +
          (fetched ? " fetched from the coordinator" : " from the local cache") + " (" +
          std::to_string(SnapshotBytes(*files)) + " bytes)");
  LaunchContext context;
  context.python = options_.python;
  context.run_dir = std::filesystem::absolute(RunDirOf(options_.work_dir, as)).string();
  context.data_dir = std::filesystem::absolute(options_.data_dir + "/" + as.dataset()).string();
  context.run_id = as.run_id();
  context.gpus = as.gpus_size();
  context.nnodes = std::max(1, as.num_nodes());
  context.node_rank = as.node_rank();
  if (context.nnodes > 1) {
    if (as.node_rank() == 0) {
      absl::StatusOr<int> port = PickFreePort();
      if (!port.ok()) return port.status();
      absl::MutexLock lock(&mu_);
      a.core_mu.AssertHeld();
      a.rendezvous = std::make_pair(
          options_.master_addr.empty() ? HostName() : options_.master_addr, *port);
    } else if (!WaitForRendezvous(a)) {
      return absl::DeadlineExceededError("node 0's torch rendezvous never arrived");
    }
    absl::MutexLock lock(&mu_);
    a.core_mu.AssertHeld();
    if (a.rendezvous) context.master_addr = a.rendezvous->first;
    if (a.rendezvous) context.master_port = a.rendezvous->second;
  } else {
    absl::StatusOr<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    context.master_addr = "127.0.0.1";
    context.master_port = *port;
  }
  if (absl::Status s = PrepareRunDir(*files, *config, context); !s.ok()) return s;
  absl::StatusOr<std::vector<std::string>> argv = ScriptArgv(*config, context);
  if (!argv.ok()) return argv.status();
  RunSpec spec;
  spec.trainer_path = argv->front();
  spec.run_dir = context.run_dir;
  spec.config_json = as.config_json();
  spec.gpus.assign(as.gpus().begin(), as.gpus().end());
  spec.argv = *std::move(argv);
  spec.env = ScriptEnv(*config, context);
  spec.script = ScriptOutputOptions{config->log_format, config->target_val_loss,
                                    /*val_lines_expected=*/a.reports_metrics};
  return spec;
}

// True once the rendezvous is there; false when the attempt was cancelled, went stale, the
// worker is stopping, or it never came.
bool WorkerCore::WaitForRendezvous(Attempt& a) {
  absl::MutexLock lock(&mu_);
  a.core_mu.AssertHeld();
  auto woken = [this, &a]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_, a.core_mu) {
    return a.rendezvous.has_value() || a.start_cancelled || a.stale || stopping_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&woken), kRendezvousWait);
  return a.rendezvous.has_value() && !a.start_cancelled && !a.stale && !stopping_;
}

bool WorkerCore::CancelStarting(const v1::Cancel& cancel) {
  absl::MutexLock lock(&mu_);
  auto it = attempts_.find(cancel.attempt_id());
  if (it == attempts_.end()) return false;
  Attempt& a = *it->second;
  a.core_mu.AssertHeld();
  if (!a.starting) return false;
  a.start_cancelled = true;
  a.cancel_grace = std::chrono::milliseconds(std::max<int64_t>(0, cancel.grace_ms()));
  LogLine("attempt " + std::to_string(cancel.attempt_id()) + ": cancel while starting (" +
          cancel.reason() + ")");
  // With a supervisor (Start() may be running), its starter delivers the cancel right after.
  return true;
}

void WorkerCore::EndUnstarted(const v1::Assignment& as, const std::string& status,
                              const std::string& error) {
  LogLine(Describe(as) + ": ended before the script started: " + status);
  v1::RunFinished f;
  f.set_attempt_id(as.attempt_id());
  f.set_fencing_token(as.fencing_token());
  f.set_status(status);
  f.set_error(error);
  GiveBackIfNoSpace(as, AppendFinished(f));
  SendPending();
}

std::optional<v1::NcclId> WorkerCore::ScriptRendezvous(const Attempt& a) const {
  a.core_mu.AssertHeld();
  if (a.assignment.num_nodes() <= 1 || a.assignment.node_rank() != 0 || !a.rendezvous) {
    return std::nullopt;
  }
  v1::NcclId id;
  id.set_attempt_id(a.assignment.attempt_id());
  id.set_master_addr(a.rendezvous->first);
  id.set_master_port(a.rendezvous->second);
  return id;
}

}  // namespace ablate::worker
