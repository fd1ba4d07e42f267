// Starts and supervises one `ablate-train` child for one attempt: writes the run folder, launches
// the trainer in its own process group (dying with the worker through PR_SET_PDEATHSIG, pinned to
// the attempt's GPUs), turns its JSON-lines stdout into metric points, keeps its stderr tail and,
// when it exits, reports the status and the run summary.
#ifndef ABLATE_WORKER_RUN_SUPERVISOR_H_
#define ABLATE_WORKER_RUN_SUPERVISOR_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ablate/v1/types.pb.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "worker/script_output.h"
#include "worker/trainer_events.h"

namespace ablate::worker {

inline constexpr size_t kStderrTailLines = 200;

struct RunSpec {
  std::string trainer_path;   // executable to run (see FindExecutable)
  std::string run_dir;        // created if missing; holds config.json, stderr.log, events.jsonl
  std::string config_json;    // canonical trainer config, written to run_dir/config.json
  std::string train_glob;     // --train
  std::string val_glob;       // --val
  std::vector<int32_t> gpus;  // CUDA_VISIBLE_DEVICES; empty: --backend cpu, CUDA_VISIBLE_DEVICES=""
  std::vector<std::string> extra_args;  // appended to the command line (e.g. --threads 2)
  // Script runs (issue 14): `argv` (non-empty) runs instead of the trainer command line, with
  // `env` (NAME=value) added to the environment; stdout is read as ScriptOutputParser reads it
  // (kept in stdout.log), and the exit is judged by ClassifyScriptExit.
  std::vector<std::string> argv = {};
  std::vector<std::string> env = {};
  std::optional<ScriptOutputOptions> script = std::nullopt;
};

struct RunResult {
  std::string status;  // "ok", "cancelled", "nan" or "failed"
  int exit_code = 0;   // 128 + signal when killed by a signal
  std::string error;
  std::string stderr_tail;  // last kStderrTailLines lines, '\n'-joined
  v1::RunSummary summary;
  bool started = false;  // a start event was seen
};

// Called from the supervisor's own threads, never concurrently with each other: on_start and
// on_point in stdout order, then on_exit exactly once after the last on_point. on_resumed (may
// be empty): the start event says the trainer resumed from a checkpoint with `step` steps done
// (at `path`); called just before on_start.
struct RunCallbacks {
  std::function<void()> on_start;
  std::function<void(const v1::MetricPoint&)> on_point;
  std::function<void(const RunResult&)> on_exit;
  std::function<void(int64_t step, const std::string& path)> on_resumed = nullptr;
};

// Thread-safe. Start once; the destructor SIGKILLs a still-running child and joins every thread
// (it must not run on a callback thread).
class RunSupervisor {
 public:
  RunSupervisor(RunSpec spec, RunCallbacks callbacks);
  ~RunSupervisor();
  RunSupervisor(const RunSupervisor&) = delete;
  RunSupervisor& operator=(const RunSupervisor&) = delete;

  // Writes the run folder and execs the trainer. Returns once the exec succeeded (then on_exit
  // follows some time later) or failed: INTERNAL for file system or fork errors, disk_space.h's
  // NoSpaceError when the run folder does not fit on the disk, NOT_FOUND when the trainer cannot
  // be executed; on error no callback is called and done() is true.
  absl::Status Start();
  // SIGTERM to the child's process group now, SIGKILL when it is still alive after `grace`.
  // Idempotent; the result's status becomes "cancelled" unless the trainer had finished ok.
  void Cancel(std::chrono::milliseconds grace);
  // True once on_exit has returned; false after `timeout`.
  bool Wait(std::chrono::milliseconds timeout);
  bool done() const;
  pid_t pid() const;  // -1 before Start

 private:
  struct Pipes;
  absl::Status WriteRunDir() const;  // run_dir and its config.json
  void Supervise(std::promise<absl::Status>* started);
  absl::Status Launch(Pipes& pipes);
  void WaitForExit();
  void ReadStdout(int fd);
  void ReadStderr(int fd);
  void HandleLine(const std::string& line);
  void HandleScriptLine(const std::string& line);
  RunResult BuildResult();
  RunResult BuildScriptResult(RunResult r);

  const RunSpec spec_;
  const RunCallbacks callbacks_;
  std::thread supervisor_;

  mutable absl::Mutex mu_;
  pid_t pid_ ABSL_GUARDED_BY(mu_) = -1;
  bool reaped_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool cancel_requested_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::chrono::steady_clock::time_point> kill_at_ ABSL_GUARDED_BY(mu_);
  int wait_status_ ABSL_GUARDED_BY(mu_) = 0;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;  // Cancel() wakes the wait loop

  // Owned by the stdout thread until it is joined.
  std::optional<nlohmann::json> end_event_;
  std::string last_error_;
  std::optional<int64_t> untimed_steps_;
  std::optional<v1::MetricPoint> last_step_;
  bool started_ = false;
  std::unique_ptr<ScriptOutputParser> script_parser_;  // script runs only
  std::deque<std::string> stdout_tail_;                // script runs: unparsed stdout lines
  // Script runs: the last point, held until a line for another step arrives, so that a step's
  // train line and val line reach the coordinator as one point (a record prints both).
  std::optional<v1::MetricPoint> pending_point_;
  // Owned by the stderr thread until it is joined.
  std::deque<std::string> stderr_tail_;
};

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_RUN_SUPERVISOR_H_
