// Mapping between table rows and the domain structs of server/core/model.h. Each kXColumns list
// is the SELECT list that ReadX expects, in order.
#ifndef ABLATE_SERVER_STORE_ROW_CODEC_H_
#define ABLATE_SERVER_STORE_ROW_CODEC_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/model.h"
#include "server/store/statement.h"

namespace ablate {

inline constexpr char kSweepColumns[] =
    "id, name, state, spec_yaml, baseline_preset, scale, dataset, target_val_loss, seeds, "
    "gpus_per_run, priority, max_concurrent, max_attempts, created_ms, finished_ms, seeds_min, "
    "order_seed, pool, checkpoint_every_ms, imported, imported_hardware";
inline constexpr char kVariantColumns[] =
    "id, sweep_id, idx, name, config_json, config_hash, diff_json, same_work";
// Selected FROM kRunFrom (runs r joined to their variant v).
inline constexpr char kRunColumns[] =
    "r.id, r.sweep_id, r.variant_id, v.name, r.seed, r.state, r.attempts_used, "
    "r.current_attempt_id, r.worker_id, r.error, r.final_val_loss, r.time_to_target_ms, "
    "r.target_step, r.reached_target, r.steps, r.mean_step_ms, r.train_time_ms, r.created_ms, "
    "r.started_ms, r.finished_ms, r.dispatch_order";
inline constexpr char kRunFrom[] = "runs r JOIN variants v ON v.id = r.variant_id";
inline constexpr char kAttemptColumns[] =
    "id, run_id, number, fencing_token, worker_id, state, exit_code, error, stderr_tail, "
    "started_ms, finished_ms, slurm_job_id, slurm_step_id, resumed_from_step";
inline constexpr char kWorkerColumns[] =
    "id, host, gpus_json, cpu_slots, trainer_version, datasets_json, connected, "
    "last_heartbeat_ms, registered_ms";
inline constexpr char kEventColumns[] = "id, sweep_id, run_id, time_ms, kind, message";
inline constexpr char kMetricColumns[] =
    "step, train_loss, val_loss, lr, step_ms, train_time_ms, tokens";

// Sweep without tags (they live in sweep_tags).
Sweep ReadSweep(const Statement& row);
Variant ReadVariant(const Statement& row);
Run ReadRun(const Statement& row);
Attempt ReadAttempt(const Statement& row);
// Malformed JSON in gpus_json / datasets_json reads as empty lists.
Worker ReadWorker(const Statement& row);
Event ReadEvent(const Statement& row);
MetricPoint ReadMetricPoint(const Statement& row);

std::optional<AttemptState> ParseAttemptState(std::string_view name);
std::string GpusToJson(const std::vector<GpuInfo>& gpus);
std::string StringsToJson(const std::vector<std::string>& strings);

// 0 <-> NULL for optional references (events.sweep_id, events.run_id).
inline std::optional<int64_t> NullIfZero(int64_t id) {
  return id == 0 ? std::nullopt : std::optional<int64_t>(id);
}

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_ROW_CODEC_H_
