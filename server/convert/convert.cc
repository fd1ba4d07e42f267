// Domain <-> protobuf translation.
#include "server/convert/convert.h"

#include <algorithm>

#include "server/core/slurm_worker_id.h"

namespace ablate {

v1::SweepState ToProto(SweepState s) {
  switch (s) {
    case SweepState::kQueued: return v1::SWEEP_QUEUED;
    case SweepState::kRunning: return v1::SWEEP_RUNNING;
    case SweepState::kSucceeded: return v1::SWEEP_SUCCEEDED;
    case SweepState::kFailed: return v1::SWEEP_FAILED;
    case SweepState::kCancelled: return v1::SWEEP_CANCELLED;
  }
  return v1::SWEEP_STATE_UNSPECIFIED;
}

v1::RunState ToProto(RunState s) {
  switch (s) {
    case RunState::kQueued: return v1::RUN_QUEUED;
    case RunState::kAssigned: return v1::RUN_ASSIGNED;
    case RunState::kRunning: return v1::RUN_RUNNING;
    case RunState::kSucceeded: return v1::RUN_SUCCEEDED;
    case RunState::kFailed: return v1::RUN_FAILED;
    case RunState::kCancelled: return v1::RUN_CANCELLED;
  }
  return v1::RUN_STATE_UNSPECIFIED;
}

std::optional<SweepState> FromProto(v1::SweepState s) {
  for (SweepState d : {SweepState::kQueued, SweepState::kRunning, SweepState::kSucceeded,
                       SweepState::kFailed, SweepState::kCancelled}) {
    if (ToProto(d) == s) return d;
  }
  return std::nullopt;
}

std::optional<RunState> FromProto(v1::RunState s) {
  for (RunState d : {RunState::kQueued, RunState::kAssigned, RunState::kRunning,
                     RunState::kSucceeded, RunState::kFailed, RunState::kCancelled}) {
    if (ToProto(d) == s) return d;
  }
  return std::nullopt;
}

void ToProto(const Sweep& in, v1::Sweep* out) {
  out->set_id(in.id);
  out->set_name(in.name);
  out->set_state(ToProto(in.state));
  out->set_baseline_preset(in.baseline_preset);
  out->set_scale(in.scale);
  out->set_dataset(in.dataset);
  out->set_target_val_loss(in.target_val_loss);
  out->set_seeds(in.seeds);
  out->set_gpus_per_run(in.gpus_per_run);
  out->set_priority(in.priority);
  out->set_max_concurrent(in.max_concurrent);
  out->set_max_attempts(in.max_attempts);
  out->set_pool(in.pool);
  out->set_checkpoint_every_ms(in.checkpoint_every_ms);
  for (const std::string& t : in.tags) out->add_tags(t);
  out->set_created_ms(in.created_ms);
  out->set_finished_ms(in.finished_ms);
  out->set_seeds_min(in.seeds_min);
  out->set_order_seed(in.order_seed);
  out->set_imported(in.imported);
  out->set_imported_hardware(in.imported_hardware);
}

void ToProto(const ImportedLogInfo& in, v1::ImportedLog* out) {
  out->set_file_name(in.file_name);
  out->set_log_sha256(in.log_sha256);
  out->set_logged_hardware(in.logged_hardware);
  out->set_script_hash(in.script_hash);
  out->set_total_steps(in.total_steps);
  out->set_timed_from_step(in.timed_from_step);
}

void FillDispatchBlocks(std::vector<Run> runs, v1::Sweep* out) {
  std::stable_sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) {
    return a.dispatch_order != b.dispatch_order ? a.dispatch_order < b.dispatch_order
                                                : a.id < b.id;
  });
  std::map<int, v1::DispatchBlock*> blocks;
  for (const Run& r : runs) {
    v1::DispatchBlock*& block = blocks[r.seed];
    if (block == nullptr) {
      block = out->add_dispatch_blocks();
      block->set_block(r.seed);
    }
    block->add_variants(r.variant_name);
  }
}

void ToProto(const std::map<RunState, int>& counts, v1::RunCounts* out) {
  auto get = [&](RunState s) {
    auto it = counts.find(s);
    return it == counts.end() ? 0 : it->second;
  };
  out->set_queued(get(RunState::kQueued));
  out->set_assigned(get(RunState::kAssigned));
  out->set_running(get(RunState::kRunning));
  out->set_succeeded(get(RunState::kSucceeded));
  out->set_failed(get(RunState::kFailed));
  out->set_cancelled(get(RunState::kCancelled));
  int total = 0;
  for (const auto& [state, n] : counts) total += n;
  out->set_total(total);
}

void ToProto(const Variant& in, v1::Variant* out) {
  out->set_id(in.id);
  out->set_index(in.index);
  out->set_name(in.name);
  out->set_config_json(in.config_json);
  out->set_config_hash(in.config_hash);
  out->set_diff_json(in.diff_json);
  out->set_same_work(in.same_work);
}

void ToProto(const RunSummary& in, v1::RunSummary* out) {
  if (in.final_val_loss) out->set_final_val_loss(*in.final_val_loss);
  if (in.time_to_target_ms) out->set_time_to_target_ms(*in.time_to_target_ms);
  if (in.target_step) out->set_target_step(*in.target_step);
  out->set_reached_target(in.reached_target);
  out->set_steps(in.steps);
  if (in.mean_step_ms) out->set_mean_step_ms(*in.mean_step_ms);
  if (in.train_time_ms) out->set_train_time_ms(*in.train_time_ms);
}

void ToProto(const Run& in, v1::Run* out) {
  out->set_id(in.id);
  out->set_sweep_id(in.sweep_id);
  out->set_variant_id(in.variant_id);
  out->set_variant_name(in.variant_name);
  out->set_seed(in.seed);
  out->set_state(ToProto(in.state));
  out->set_attempts_used(in.attempts_used);
  out->set_worker_id(in.worker_id);
  out->set_error(in.error);
  ToProto(in.summary, out->mutable_summary());
  out->set_created_ms(in.created_ms);
  out->set_started_ms(in.started_ms);
  out->set_finished_ms(in.finished_ms);
  out->set_dispatch_order(in.dispatch_order);
}

void ToProto(const Attempt& in, v1::Attempt* out) {
  out->set_id(in.id);
  out->set_number(in.number);
  out->set_worker_id(in.worker_id);
  out->set_state(std::string(AttemptStateName(in.state)));
  out->set_exit_code(in.exit_code);
  out->set_error(in.error);
  out->set_stderr_tail(in.stderr_tail);
  out->set_started_ms(in.started_ms);
  out->set_finished_ms(in.finished_ms);
  out->set_slurm_job_id(in.slurm_job_id);
  out->set_slurm_step_id(in.slurm_step_id);
  if (in.resumed_from_step) out->set_resumed_from_step(*in.resumed_from_step);
}

void ToProto(const Worker& in, v1::Worker* out) {
  out->set_id(in.id);
  out->set_host(in.host);
  for (const GpuInfo& g : in.gpus) {
    v1::Gpu* p = out->add_gpus();
    p->set_index(g.index);
    p->set_model(g.model);
    p->set_memory_mb(g.memory_mb);
  }
  out->set_cpu_slots(in.cpu_slots);
  out->set_trainer_version(in.trainer_version);
  for (const std::string& d : in.datasets) out->add_datasets(d);
  out->set_connected(in.connected);
  out->set_last_heartbeat_ms(in.last_heartbeat_ms);
  if (std::optional<SlurmWorkerRef> s = ParseSlurmWorkerId(in.id)) {
    out->set_slurm_allocation(s->allocation());
  }
}

void ToProto(const WorkerAllocation& in, int64_t now_ms, v1::Worker* out) {
  out->set_draining(in.draining);
  if (in.ssh) out->set_ssh_pool(in.pool);
  if (in.job_id == 0) return;
  out->set_slurm_pool(in.pool);
  out->set_slurm_job_id(in.job_id);
  out->set_slurm_time_left_s(in.ends_ms > 0 ? std::max<int64_t>(0, in.ends_ms - now_ms) / 1000
                                            : -1);
}

void ToProto(const MetricPoint& in, v1::MetricPoint* out) {
  out->set_step(in.step);
  if (in.train_loss) out->set_train_loss(*in.train_loss);
  if (in.val_loss) out->set_val_loss(*in.val_loss);
  if (in.lr) out->set_lr(*in.lr);
  if (in.step_ms) out->set_step_ms(*in.step_ms);
  if (in.train_time_ms) out->set_train_time_ms(*in.train_time_ms);
  if (in.tokens) out->set_tokens(*in.tokens);
}

void ToProto(const Event& in, v1::Event* out) {
  out->set_id(in.id);
  out->set_sweep_id(in.sweep_id);
  out->set_run_id(in.run_id);
  out->set_time_ms(in.time_ms);
  out->set_kind(in.kind);
  out->set_message(in.message);
}

RunSummary FromProto(const v1::RunSummary& in) {
  RunSummary s;
  if (in.has_final_val_loss()) s.final_val_loss = in.final_val_loss();
  if (in.has_time_to_target_ms()) s.time_to_target_ms = in.time_to_target_ms();
  if (in.has_target_step()) s.target_step = in.target_step();
  s.reached_target = in.reached_target();
  s.steps = in.steps();
  if (in.has_mean_step_ms()) s.mean_step_ms = in.mean_step_ms();
  if (in.has_train_time_ms()) s.train_time_ms = in.train_time_ms();
  return s;
}

MetricPoint FromProto(const v1::MetricPoint& in) {
  MetricPoint p;
  p.step = in.step();
  if (in.has_train_loss()) p.train_loss = in.train_loss();
  if (in.has_val_loss()) p.val_loss = in.val_loss();
  if (in.has_lr()) p.lr = in.lr();
  if (in.has_step_ms()) p.step_ms = in.step_ms();
  if (in.has_train_time_ms()) p.train_time_ms = in.train_time_ms();
  if (in.has_tokens()) p.tokens = in.tokens();
  return p;
}

GpuInfo FromProto(const v1::Gpu& in) { return GpuInfo{in.index(), in.model(), in.memory_mb()}; }

void SnapshotToProto(const std::string& hash, const Snapshot& files, v1::CodeSnapshot* out) {
  out->set_hash(hash);
  for (const SnapshotFile& f : files) {
    v1::SnapshotFile* p = out->add_files();
    p->set_path(f.path);
    p->set_content(f.content);
    p->set_executable(f.executable);
  }
}

ScriptUploads UploadsFromProto(
    const google::protobuf::RepeatedPtrField<v1::ScriptUpload>& uploads) {
  ScriptUploads out;
  for (const v1::ScriptUpload& u : uploads) {
    ScriptUpload& upload = out[u.script()];
    upload.error = u.error();
    for (const v1::SnapshotFile& f : u.files()) {
      upload.files.push_back({f.path(), f.content(), f.executable()});
    }
    SortSnapshot(&upload.files);
  }
  return out;
}

}  // namespace ablate
