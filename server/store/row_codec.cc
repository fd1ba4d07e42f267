// Row <-> struct mapping. Column indices follow the kXColumns lists of the header.
#include "server/store/row_codec.h"

#include <nlohmann/json.hpp>

namespace ablate {
namespace {

nlohmann::json ParseJsonArray(const std::string& text) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return json.is_array() ? json : nlohmann::json::array();
}

std::vector<GpuInfo> GpusFromJson(const std::string& text) {
  std::vector<GpuInfo> gpus;
  for (const nlohmann::json& item : ParseJsonArray(text)) {
    if (!item.is_object()) continue;
    GpuInfo gpu;
    gpu.index = item.value("index", 0);
    gpu.model = item.value("model", "");
    gpu.memory_mb = item.value("memory_mb", int64_t{0});
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::vector<std::string> StringsFromJson(const std::string& text) {
  std::vector<std::string> strings;
  for (const nlohmann::json& item : ParseJsonArray(text)) {
    if (item.is_string()) strings.push_back(item.get<std::string>());
  }
  return strings;
}

}  // namespace

Sweep ReadSweep(const Statement& row) {
  Sweep s;
  s.id = row.Int(0);
  s.name = row.Text(1);
  s.state = ParseSweepState(row.Text(2)).value_or(SweepState::kQueued);
  s.spec_yaml = row.Text(3);
  s.baseline_preset = row.Text(4);
  s.scale = row.Text(5);
  s.dataset = row.Text(6);
  s.target_val_loss = row.Double(7);
  s.seeds = static_cast<int>(row.Int(8));
  s.gpus_per_run = static_cast<int>(row.Int(9));
  s.priority = static_cast<int>(row.Int(10));
  s.max_concurrent = static_cast<int>(row.Int(11));
  s.max_attempts = static_cast<int>(row.Int(12));
  s.created_ms = row.Int(13);
  s.finished_ms = row.Int(14);
  s.seeds_min = static_cast<int>(row.Int(15));
  s.order_seed = row.Int(16);
  s.pool = row.Text(17);
  s.checkpoint_every_ms = row.Int(18);
  s.imported = row.Int(19) != 0;
  s.imported_hardware = row.Text(20);
  return s;
}

Variant ReadVariant(const Statement& row) {
  Variant v;
  v.id = row.Int(0);
  v.sweep_id = row.Int(1);
  v.index = static_cast<int>(row.Int(2));
  v.name = row.Text(3);
  v.config_json = row.Text(4);
  v.config_hash = row.Text(5);
  v.diff_json = row.Text(6);
  v.same_work = row.Int(7) != 0;
  return v;
}

Run ReadRun(const Statement& row) {
  Run r;
  r.id = row.Int(0);
  r.sweep_id = row.Int(1);
  r.variant_id = row.Int(2);
  r.variant_name = row.Text(3);
  r.seed = static_cast<int>(row.Int(4));
  r.state = ParseRunState(row.Text(5)).value_or(RunState::kQueued);
  r.attempts_used = static_cast<int>(row.Int(6));
  r.current_attempt_id = row.Int(7);
  r.worker_id = row.Text(8);
  r.error = row.Text(9);
  r.summary.final_val_loss = row.OptDouble(10);
  r.summary.time_to_target_ms = row.OptDouble(11);
  r.summary.target_step = row.OptInt(12);
  r.summary.reached_target = row.Int(13) != 0;
  r.summary.steps = row.Int(14);
  r.summary.mean_step_ms = row.OptDouble(15);
  r.summary.train_time_ms = row.OptDouble(16);
  r.created_ms = row.Int(17);
  r.started_ms = row.Int(18);
  r.finished_ms = row.Int(19);
  r.dispatch_order = row.Int(20);
  return r;
}

Attempt ReadAttempt(const Statement& row) {
  Attempt a;
  a.id = row.Int(0);
  a.run_id = row.Int(1);
  a.number = static_cast<int>(row.Int(2));
  a.fencing_token = row.Int(3);
  a.worker_id = row.Text(4);
  a.state = ParseAttemptState(row.Text(5)).value_or(AttemptState::kAssigned);
  a.exit_code = static_cast<int>(row.Int(6));
  a.error = row.Text(7);
  a.stderr_tail = row.Text(8);
  a.started_ms = row.Int(9);
  a.finished_ms = row.Int(10);
  a.slurm_job_id = row.Int(11);
  a.slurm_step_id = row.Text(12);
  a.resumed_from_step = row.OptInt(13);
  return a;
}

Worker ReadWorker(const Statement& row) {
  Worker w;
  w.id = row.Text(0);
  w.host = row.Text(1);
  w.gpus = GpusFromJson(row.Text(2));
  w.cpu_slots = static_cast<int>(row.Int(3));
  w.trainer_version = row.Text(4);
  w.datasets = StringsFromJson(row.Text(5));
  w.connected = row.Int(6) != 0;
  w.last_heartbeat_ms = row.Int(7);
  w.registered_ms = row.Int(8);
  return w;
}

Event ReadEvent(const Statement& row) {
  Event e;
  e.id = row.Int(0);
  e.sweep_id = row.Int(1);  // NULL reads as 0
  e.run_id = row.Int(2);
  e.time_ms = row.Int(3);
  e.kind = row.Text(4);
  e.message = row.Text(5);
  return e;
}

MetricPoint ReadMetricPoint(const Statement& row) {
  MetricPoint p;
  p.step = row.Int(0);
  p.train_loss = row.OptDouble(1);
  p.val_loss = row.OptDouble(2);
  p.lr = row.OptDouble(3);
  p.step_ms = row.OptDouble(4);
  p.train_time_ms = row.OptDouble(5);
  p.tokens = row.OptInt(6);
  return p;
}

std::optional<AttemptState> ParseAttemptState(std::string_view name) {
  for (AttemptState s : {AttemptState::kAssigned, AttemptState::kRunning, AttemptState::kSucceeded,
                         AttemptState::kFailed, AttemptState::kLost, AttemptState::kCancelled}) {
    if (AttemptStateName(s) == name) return s;
  }
  return std::nullopt;
}

std::string GpusToJson(const std::vector<GpuInfo>& gpus) {
  nlohmann::json json = nlohmann::json::array();
  for (const GpuInfo& gpu : gpus) {
    json.push_back({{"index", gpu.index}, {"model", gpu.model}, {"memory_mb", gpu.memory_mb}});
  }
  return json.dump();
}

std::string StringsToJson(const std::vector<std::string>& strings) {
  return nlohmann::json(strings).dump();
}

}  // namespace ablate
