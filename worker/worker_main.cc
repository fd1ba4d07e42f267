// ablate-worker: the daemon on each GPU node (DESIGN §4). Registers the node with the coordinator,
// runs assigned attempts as ablate-train children and streams their metrics back.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "common/cli_path_flag.h"
#include "common/token_file.h"
#include "common/utf8_text.h"
#include "worker/command.h"
#include "worker/datasets.h"
#include "worker/gpu_probe.h"
#include "worker/preflight.h"
#include "worker/slurm_env.h"
#include "worker/stop_watch.h"
#include "worker/worker_client.h"
#include "worker/worker_core.h"

namespace {

using namespace ablate::worker;

struct Flags {
  std::string coordinator, work_dir, token_file, tls_ca, gpus = "all", name, data_dir, trainer;
  bool slurm = false;
  std::string pool, ssh_host;
  int64_t incarnation = 0;
  int64_t idle_exit_ms = 0;
  int cpu_slots = 1;
  int64_t heartbeat_ms = 0;
  int64_t grace_ms = 10000;
  int64_t dataset_rescan_ms = 10000;
  bool allow_scripts = false;
  std::string python = "python3", master_addr;
  std::string checkpoint_dir;
  bool check = false, json = false;
};

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--coordinator", f.coordinator, "coordinator HOST:PORT (required but with --check)");
  app.add_flag("--check", f.check,
               "check this node and exit: GPUs, the NVIDIA driver against ablate-train's CUDA, "
               "cuBLASLt, NCCL, work and data dirs, script launchers; one line each, with the fix "
               "for each problem. Exit 0 when nothing failed, 1 otherwise");
  app.add_flag("--json", f.json, "with --check: the checks as JSON");
  app.add_option("--work-dir", f.work_dir, "run folders and the outbox live here")
      ->transform(ablate::PathFlag())
      ->required();
  app.add_option("--token-file", f.token_file, "file holding the worker token")
      ->transform(ablate::PathFlag());
  app.add_option("--tls-ca", f.tls_ca,
                 "PEM CA certificate: connect with TLS, verifying the coordinator")
      ->transform(ablate::PathFlag());
  app.add_option("--gpus", f.gpus, "all, none, or indices like 0,1")->default_val("all");
  app.add_option("--cpu-slots", f.cpu_slots, "concurrent CPU-only runs")
      ->check(CLI::NonNegativeNumber)
      ->default_val(1);
  app.add_option("--name", f.name, "worker id (default: the host name)");
  app.add_option("--data-dir", f.data_dir, "datasets (default: WORK_DIR/data)")
      ->transform(ablate::PathFlag());
  app.add_option("--trainer", f.trainer,
                 "ablate-train binary (default: next to this binary, then $PATH)")
      ->transform(ablate::PathFlag(ablate::PathKind::kProgram));
  app.add_option("--heartbeat-ms", f.heartbeat_ms,
                 "heartbeat period (default: what the coordinator's Welcome asks)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--grace-ms", f.grace_ms, "SIGTERM-to-SIGKILL grace for children at shutdown")
      ->check(CLI::NonNegativeNumber)
      ->default_val(10000);
  app.add_option("--dataset-rescan-ms", f.dataset_rescan_ms,
                 "re-check the data dir this often; a change is sent to the coordinator")
      ->check(CLI::PositiveNumber)
      ->default_val(10000);
  app.add_flag("--allow-scripts", f.allow_scripts,
               "run script runs: sweeps that name a researcher's own training script. This runs "
               "code submitted to the coordinator on this node; allow it only where everyone who "
               "can submit may run code here");
  app.add_option("--python", f.python, "interpreter for script runs (python, torchrun, {python})")
      ->transform(ablate::PathFlag(ablate::PathKind::kProgram))
      ->default_val("python3");
  app.add_option("--master-addr", f.master_addr,
                 "address other nodes reach this one at, for a multi-node script run's torch "
                 "rendezvous (default: the host name)");
  app.add_option("--checkpoint-dir", f.checkpoint_dir,
                 "where runs of sweeps with checkpoint_every keep their checkpoints (DIR/run-ID/; "
                 "shared storage on a cluster, so that a requeued run resumes on any worker from "
                 "the newest one). Without it such sweeps run without checkpoints")
      ->transform(ablate::PathFlag());
  app.add_flag("--slurm", f.slurm,
               "run as a Slurm pilot (started by srun): the id names the allocation "
               "(slurm/CLUSTER/JOB.RESTART/NODE), GPUs come from CUDA_VISIBLE_DEVICES, run "
               "folders go to WORK_DIR/slurm-JOB.RESTART-NODE");
  app.add_option("--pool", f.pool,
                 "with --slurm or --ssh-host: the coordinator's pool this worker serves");
  app.add_option("--ssh-host", f.ssh_host,
                 "run as an ssh pool's worker (the coordinator starts it so): the id is "
                 "ssh/POOL/HOST, HOST being the node's key in the pool; needs --pool and "
                 "--incarnation");
  app.add_option("--incarnation", f.incarnation,
                 "with --ssh-host: which of the coordinator's starts on this host this is")
      ->check(CLI::PositiveNumber);
  app.add_option("--idle-exit-ms", f.idle_exit_ms,
                 "exit after this long with nothing running and nothing to deliver (0: never)")
      ->check(CLI::NonNegativeNumber);
}

// The valid datasets under data_dir. Each reason a dataset is left out is logged when it first
// appears, not again on every rescan.
class DatasetLister {
 public:
  explicit DatasetLister(std::string data_dir) : data_dir_(std::move(data_dir)) {}
  std::vector<std::string> operator()() {
    std::set<std::string> lines;
    std::vector<std::string> names =
        ListDatasets(data_dir_, [&](std::string_view line) { lines.emplace(line); });
    absl::MutexLock lock(&mu_);
    for (const std::string& line : lines) {
      if (!logged_.count(line)) LogLine(line);
    }
    logged_ = std::move(lines);
    return names;
  }

 private:
  const std::string data_dir_;
  absl::Mutex mu_;
  std::set<std::string> logged_ ABSL_GUARDED_BY(mu_);
};

std::string HostName() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "localhost";
}

// The first line of `TRAINER --version`, valid UTF-8 and at most 200 bytes: the coordinator
// refuses a Hello whose text has control characters (a multi-line version text would be).
std::string TrainerVersion(const std::string& trainer) {
  absl::StatusOr<CommandResult> r = RunCommand({trainer, "--version"}, std::chrono::seconds(10));
  if (!r.ok() || r->exit_code != 0) return "unknown";
  std::string line = Trim(r->out.substr(0, r->out.find('\n')));
  line = std::string(ablate::Utf8Head(ablate::ValidUtf8(line), 200));
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return line.empty() ? "unknown" : line;
}

// `--python` as an absolute path: a bare name is looked up on $PATH, a path must be an executable
// file; else the error says what to do.
absl::StatusOr<std::string> FindInterpreter(const std::string& python) {
  absl::StatusOr<std::string> found = FindExecutable(python, {});
  if (found.ok()) return std::filesystem::absolute(*found).string();
  return absl::NotFoundError("--python " + python + ": " + std::string(found.status().message()) +
                             "; script runs (--allow-scripts) need a Python interpreter: "
                             "install python3 or pass --python /path/to/python3");
}

int Die(const std::string& message) {
  std::cerr << "ablate-worker: " << message << "\n";
  return 2;
}

PreflightOptions MakePreflightOptions(const Flags& f, const absl::StatusOr<std::string>& trainer) {
  PreflightOptions o;
  o.trainer = trainer.ok() ? *trainer : "";
  o.trainer_error = trainer.ok() ? "" : std::string(trainer.status().message());
  o.gpus = f.gpus;
  o.work_dir = f.work_dir;
  o.data_dir = f.data_dir;
  o.allow_scripts = f.allow_scripts;
  o.python = f.python;
  return o;
}

int RunCheck(const PreflightOptions& o, bool json) {
  std::vector<CheckLine> lines = RunPreflight(o);
  std::cout << (json ? PreflightJson(lines) : PreflightText(lines)) << std::flush;
  return PreflightExitCode(lines);
}

// At every start the same checks go to the log, each line that is not ok with its fix; they run
// beside the connection, so a slow nvidia-smi does not hold the worker back.
std::thread LogPreflight(PreflightOptions o) {
  o.run = [](const std::vector<std::string>& argv) {
    return RunCommand(argv, std::chrono::seconds(20));
  };
  return std::thread([o = std::move(o)] {
    std::vector<CheckLine> lines = RunPreflight(o);
    std::string text = PreflightText(lines);
    for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
      LogLine("preflight: " + text.substr(at, end - at));
    }
  });
}

// Blocks the shutdown signals (and USR1, drain) in this thread and every thread started after it;
// one thread takes them with sigwait (AwaitStop).
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGUSR1);  // drain (Slurm's --signal before the time limit)
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// Under --slurm: the pilot's identity from Slurm's environment, and its own WORK_DIR below
// --work-dir. nullopt outside Slurm.
absl::StatusOr<std::optional<SlurmIdentity>> ReadSlurm(Flags& f) {
  if (!f.slurm) {
    if (!f.pool.empty() && f.ssh_host.empty()) {
      return absl::InvalidArgumentError("--pool needs --slurm or --ssh-host");
    }
    return std::nullopt;
  }
  if (!f.ssh_host.empty()) return absl::InvalidArgumentError("--ssh-host and --slurm exclude each other");
  absl::StatusOr<SlurmIdentity> s =
      ReadSlurmIdentity([](const char* name) { return std::getenv(name); }, f.pool);
  if (!s.ok()) return s.status();
  // Pilots of one node share WORK_DIR: each keeps its runs and outbox apart.
  const ablate::v1::SlurmAllocation& a = s->allocation;
  f.work_dir += "/slurm-" + std::to_string(a.job_id()) + "." + std::to_string(a.restart_count()) +
                "-" + std::to_string(a.node_index());
  return std::optional<SlurmIdentity>(*std::move(s));
}

// The GPUs this worker announces: Slurm's, or --gpus of the probed ones.
absl::StatusOr<std::vector<ablate::v1::Gpu>> PickGpus(const Flags& f,
                                                      const std::optional<SlurmIdentity>& slurm) {
  if (slurm) {
    return SlurmGpus(f.gpus == "none" ? std::vector<int>{} : slurm->gpu_indices, ProbeGpus());
  }
  return SelectGpus(f.gpus == "none" ? std::vector<ablate::v1::Gpu>{} : ProbeGpus(), f.gpus);
}

WorkerCoreOptions CoreOptions(const Flags& f, const std::string& trainer) {
  WorkerCoreOptions o;
  o.work_dir = f.work_dir;
  o.data_dir = f.data_dir;
  o.trainer_path = trainer;
  o.shutdown_grace = std::chrono::milliseconds(f.grace_ms);
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  o.allow_scripts = f.allow_scripts;
  o.python = f.python;
  o.master_addr = f.master_addr;
  o.checkpoint_dir = f.checkpoint_dir;
  o.trainer_args = {"--threads", std::to_string(std::max(1, cores / std::max(1, f.cpu_slots)))};
  return o;
}

// Where and how the client dials: coordinator, token, TLS CA, heartbeat, dataset rescans.
absl::StatusOr<WorkerClientOptions> ClientOptions(const Flags& f, const std::string& token) {
  WorkerClientOptions o;
  o.coordinator = f.coordinator;
  o.token = token;
  if (!f.tls_ca.empty()) {
    std::ifstream ca(f.tls_ca);
    if (!ca) return absl::InvalidArgumentError("cannot read --tls-ca file " + f.tls_ca);
    o.tls_ca_pem.assign(std::istreambuf_iterator<char>(ca), {});
  }
  o.heartbeat_ms = f.heartbeat_ms;
  o.dataset_rescan = std::chrono::milliseconds(f.dataset_rescan_ms);
  return o;
}

// What this worker is, as its Hello says it (the held runs are asked for at each Hello).
struct Identity {
  std::string id;
  std::string host;
  std::string version;
  std::vector<ablate::v1::Gpu> gpus;
  std::optional<SlurmIdentity> slurm;
  std::optional<ablate::v1::SshNode> ssh;
};

// Under --ssh-host: the ssh pool's node this worker is; nullopt without it.
absl::StatusOr<std::optional<ablate::v1::SshNode>> ReadSsh(const Flags& f) {
  if (f.ssh_host.empty()) {
    if (f.incarnation != 0) return absl::InvalidArgumentError("--incarnation needs --ssh-host");
    return std::nullopt;
  }
  if (f.pool.empty() || f.incarnation <= 0) {
    return absl::InvalidArgumentError("--ssh-host needs --pool and --incarnation");
  }
  ablate::v1::SshNode node;
  node.set_pool(f.pool);
  node.set_host(f.ssh_host);
  node.set_incarnation(f.incarnation);
  return std::optional<ablate::v1::SshNode>(std::move(node));
}

ablate::v1::Hello MakeHello(const Flags& f, const Identity& me, DatasetLister& datasets,
                            const WorkerCore& core) {
  ablate::v1::Hello hello;
  hello.set_worker_id(me.id);
  hello.set_host(me.host);
  for (const auto& g : me.gpus) *hello.add_gpus() = g;
  hello.set_cpu_slots(f.cpu_slots);
  hello.set_trainer_version(me.version);
  hello.set_allow_scripts(f.allow_scripts);
  for (const std::string& d : datasets()) hello.add_datasets(d);
  for (const auto& h : core.Held()) *hello.add_running() = h;
  if (me.slurm) *hello.mutable_slurm() = me.slurm->allocation;
  if (me.ssh) *hello.mutable_ssh() = *me.ssh;
  return hello;
}

// Checks what serving needs: a coordinator, the trainer found, and under --allow-scripts the
// interpreter, whose absolute path replaces f.python.
absl::Status CheckServeFlags(Flags& f, const absl::StatusOr<std::string>& trainer) {
  if (f.coordinator.empty()) return absl::InvalidArgumentError("--coordinator is required");
  if (!trainer.ok()) return trainer.status();
  if (f.allow_scripts) {
    // Resolved once here: the supervisor execs an absolute path, never a bare name.
    absl::StatusOr<std::string> python = FindInterpreter(f.python);
    if (!python.ok()) return python.status();
    f.python = *python;
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ablate-worker: runs ablate-train children for an ablate coordinator"};
  Flags f;
  AddFlags(app, f);
  CLI11_PARSE(app, argc, argv);
  // Block the shutdown signals before any thread starts; one thread takes them with sigwait.
  sigset_t stop_signals = BlockStopSignals();
  ::signal(SIGPIPE, SIG_IGN);

  if (f.data_dir.empty()) f.data_dir = f.work_dir + "/data";
  // ../trainer: the build tree's layout (build/worker/ablate-worker, build/trainer/ablate-train).
  absl::StatusOr<std::string> trainer =
      FindExecutable(f.trainer.empty() ? "ablate-train" : f.trainer, {"../trainer"});
  PreflightOptions preflight = MakePreflightOptions(f, trainer);
  if (f.check) return RunCheck(preflight, f.json);
  if (absl::Status s = CheckServeFlags(f, trainer); !s.ok()) return Die(std::string(s.message()));
  absl::StatusOr<std::string> token = ablate::ReadTokenFile(f.token_file);
  if (!token.ok()) return Die(std::string(token.status().message()));
  absl::StatusOr<std::optional<SlurmIdentity>> slurm = ReadSlurm(f);
  if (!slurm.ok()) return Die(std::string(slurm.status().message()));
  absl::StatusOr<std::vector<ablate::v1::Gpu>> gpus = PickGpus(f, *slurm);
  if (!gpus.ok()) return Die(std::string(gpus.status().message()));
  absl::StatusOr<std::optional<ablate::v1::SshNode>> ssh = ReadSsh(f);
  if (!ssh.ok()) return Die(std::string(ssh.status().message()));
  Identity me;
  me.slurm = *std::move(slurm);
  me.ssh = *std::move(ssh);
  me.gpus = *std::move(gpus);
  me.host = HostName();
  me.id = me.slurm  ? me.slurm->worker_id
          : me.ssh  ? "ssh/" + me.ssh->pool() + "/" + me.ssh->host()
          : f.name.empty() ? me.host
                           : f.name;
  me.version = TrainerVersion(*trainer);
  WorkerCoreOptions core_options = CoreOptions(f, *trainer);
  absl::StatusOr<WorkerClientOptions> client_options = ClientOptions(f, *token);
  if (!client_options.ok()) return Die(std::string(client_options.status().message()));

  WorkerCore* core_ptr = nullptr;
  DatasetLister datasets(f.data_dir);
  client_options->list_datasets = [&datasets] { return datasets(); };
  client_options->make_hello = [&] { return MakeHello(f, me, datasets, *core_ptr); };
  client_options->draining = [&core_ptr] { return core_ptr->TakesNoRuns(); };
  WorkerClient client(*client_options);
  core_options.fetch_snapshot = [&client](const std::string& hash) {
    return client.FetchSnapshot(hash);
  };
  absl::StatusOr<std::unique_ptr<WorkerCore>> core = WorkerCore::Create(core_options, &client);
  if (!core.ok()) return Die(core.status().ToString());
  core_ptr = core->get();
  client.SetCore(core_ptr);
  LogLine("worker " + me.id + ": " + std::to_string(me.gpus.size()) + " GPU(s), " +
          std::to_string(f.cpu_slots) + " CPU slot(s), trainer " + *trainer + " (" +
          me.version + "), datasets in " + f.data_dir +
          (f.allow_scripts ? "; runs scripts with " + f.python : "; runs no scripts") +
          (f.checkpoint_dir.empty() ? "" : "; checkpoints in " + f.checkpoint_dir));

  preflight.ask_trainer = !me.gpus.empty();  // the trainer's CUDA libraries matter only for GPUs
  std::thread preflight_log = LogPreflight(preflight);
  std::thread signals([&] {
    StopWatchOptions stop_options;
    stop_options.idle_exit = std::chrono::milliseconds(f.idle_exit_ms);
    LogLine(AwaitStop(stop_signals, **core, stop_options) + ": stopping children");
    (*core)->Shutdown();
    client.Stop();
  });
  client.Run();
  signals.join();
  preflight_log.join();
  core->reset();
  LogLine("stopped");
  return 0;
}
