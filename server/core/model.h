// The coordinator's domain types: sweeps, variants, runs, attempts, workers, events, metric
// points. Plain structs shared by the core logic (expansion, scheduling), the SQLite store and
// the RPC adapters; nothing here knows about gRPC or SQLite.
#ifndef ABLATE_SERVER_CORE_MODEL_H_
#define ABLATE_SERVER_CORE_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ablate {

// Times are milliseconds since the Unix epoch unless a name says otherwise.
using TimestampMs = int64_t;

enum class SweepState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };
enum class RunState { kQueued, kAssigned, kRunning, kSucceeded, kFailed, kCancelled };

std::string_view SweepStateName(SweepState s);
std::string_view RunStateName(RunState s);
// Parses the names above ("queued", "running", ...); nullopt for anything else.
std::optional<SweepState> ParseSweepState(std::string_view name);
std::optional<RunState> ParseRunState(std::string_view name);
bool IsTerminal(RunState s);

// One named config of a sweep: the baseline (index 0, name "baseline") or an ablation / grid
// point. `config_json` is canonical (trainer/config/knob_schema.h); `diff_json` is
// ConfigDiff(baseline, config) as JSON text ("{}" for the baseline). `same_work`: the
// researcher declared (`same_work: true`, script ablations only, server/sweep/sweep_spec.h) that
// this variant does the baseline's work per step, so the confound check tests its ms/step.
struct Variant {
  int64_t id = 0;
  int64_t sweep_id = 0;
  int index = 0;
  std::string name;
  std::string config_json;
  std::string config_hash;
  std::string diff_json;
  bool same_work = false;
};

// A submitted sweep. `spec_yaml` is the text the researcher wrote, kept verbatim.
struct Sweep {
  int64_t id = 0;
  std::string name;
  SweepState state = SweepState::kQueued;
  std::string spec_yaml;
  std::string baseline_preset;  // may be empty when the baseline is built from `set` only
  std::string scale = "full";
  std::string dataset;
  double target_val_loss = 3.28;
  int seeds = 1;  // per variant; with sequential seeds the most (seeds_min .. seeds)
  // Sequential seeds (server/stats/sequential_rule.h): 0 = a fixed `seeds` per variant; else
  // every variant gets seeds_min seeds and then one more block at a time until its verdict is
  // settled or it has `seeds`.
  int seeds_min = 0;
  // Seeds the blocked, shuffled dispatch order (server/core/run_order.h).
  int64_t order_seed = 0;
  int gpus_per_run = 1;
  int priority = 0;
  int max_concurrent = 0;  // 0 = unlimited
  int max_attempts = 3;
  std::vector<std::string> tags;
  std::string pool;  // "" = any worker outside a pool; else only that pool's workers (issue 15)
  // Built-in trainer runs checkpoint this often (ms of wall time) into their worker's
  // --checkpoint-dir, and a requeued run resumes from the newest checkpoint; 0 = none.
  int64_t checkpoint_every_ms = 0;
  TimestampMs created_ms = 0;
  TimestampMs finished_ms = 0;  // 0 while not finished
  // Imported from record logs (issue 39): succeeded runs that ran elsewhere, one per log, never
  // dispatched; imported_hardware is what the importer said they ran on ("" = unknown).
  bool imported = false;
  std::string imported_hardware;
};

// Summary fields live on the run so that tables never scan curves (DESIGN §5).
struct RunSummary {
  std::optional<double> final_val_loss;
  std::optional<double> time_to_target_ms;
  std::optional<int64_t> target_step;
  bool reached_target = false;
  int64_t steps = 0;
  std::optional<double> mean_step_ms;
  std::optional<double> train_time_ms;
};

// One variant × seed.
struct Run {
  int64_t id = 0;
  int64_t sweep_id = 0;
  int64_t variant_id = 0;
  std::string variant_name;
  int seed = 0;  // also the run's block in the dispatch order
  // Rank in the sweep's dispatch order (server/core/run_order.h); 0 for runs stored before it.
  int64_t dispatch_order = 0;
  RunState state = RunState::kQueued;
  int attempts_used = 0;  // trainer failures counted against max_attempts
  int64_t current_attempt_id = 0;  // 0 when none
  std::string worker_id;            // of the current attempt, if any
  std::string error;                // last failure, human-readable
  RunSummary summary;
  TimestampMs created_ms = 0;
  TimestampMs started_ms = 0;
  TimestampMs finished_ms = 0;
};

enum class AttemptState { kAssigned, kRunning, kSucceeded, kFailed, kLost, kCancelled };
std::string_view AttemptStateName(AttemptState s);

// One assignment of a run to a worker. `fencing_token` increases monotonically per run; only the
// run's current attempt may write metrics or results.
struct Attempt {
  int64_t id = 0;
  int64_t run_id = 0;
  int number = 0;  // 1, 2, ... within the run
  int64_t fencing_token = 0;
  std::string worker_id;
  AttemptState state = AttemptState::kAssigned;
  int exit_code = 0;
  std::string error;
  std::string stderr_tail;
  TimestampMs started_ms = 0;
  TimestampMs finished_ms = 0;
  // The Slurm allocation the attempt ran in (its node 0's), 0 outside Slurm; the step id when the
  // run was an `srun` step of it ("" otherwise).
  int64_t slurm_job_id = 0;
  std::string slurm_step_id;
  // The trainer resumed from an earlier attempt's checkpoint with this many steps done (the
  // run's curve: earlier points up to this step, then this attempt's); unset: from step 0.
  std::optional<int64_t> resumed_from_step;
};

struct GpuInfo {
  int index = 0;
  std::string model;
  int64_t memory_mb = 0;
};

struct Worker {
  std::string id;
  std::string host;
  std::vector<GpuInfo> gpus;
  int cpu_slots = 0;
  std::string trainer_version;
  std::vector<std::string> datasets;
  bool connected = false;
  TimestampMs last_heartbeat_ms = 0;
  TimestampMs registered_ms = 0;
};

// What the coordinator knows now (not stored) of a worker inside a Slurm allocation.
struct WorkerAllocation {
  std::string pool;        // "" for a worker started in Slurm by hand
  int64_t job_id = 0;      // 0 outside Slurm
  TimestampMs ends_ms = 0;  // when Slurm's time limit ends the allocation; 0 unknown
  bool draining = false;   // takes no new runs
  bool ssh = false;        // an ssh pool's worker (`pool` is its pool, job_id 0)
};

// The worker id of an imported run's attempt (no worker ever has it: Hello refuses it,
// Dispatcher::CheckHello).
inline constexpr char kImportedWorkerId[] = "imported";

// The record log an imported run was read from (v1::ImportedLog; migrations/0011).
struct ImportedLogInfo {
  std::string file_name;
  std::string log_sha256;
  std::string logged_hardware;  // from the log's nvidia-smi table; "" none
  std::string script_hash;      // "" when the log has no script
  int64_t total_steps = 0;
  int64_t timed_from_step = 0;
};

// One training step of one attempt. Optional fields are absent when the trainer did not report
// them at that step (val_loss only at evaluations).
struct MetricPoint {
  int64_t step = 0;
  std::optional<double> train_loss;
  std::optional<double> val_loss;
  std::optional<double> lr;
  std::optional<double> step_ms;
  std::optional<double> train_time_ms;  // cumulative timed training time
  std::optional<int64_t> tokens;        // cumulative tokens
};

// A run or sweep state change, a log line or a notice.
struct Event {
  int64_t id = 0;
  int64_t sweep_id = 0;
  int64_t run_id = 0;  // 0 for sweep-level events
  TimestampMs time_ms = 0;
  std::string kind;  // "state", "log", "error", ...
  std::string message;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_MODEL_H_
