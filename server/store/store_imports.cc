// Store: sweeps imported from record logs (issue 39; migrations/0011_imported_logs.sql).
#include "absl/strings/str_cat.h"
#include "server/store/connection.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"
#include "server/store/store.h"
#include "server/store/store_queries.h"

namespace ablate {
namespace {

absl::StatusOr<int64_t> ImportTx(Connection& c, const Sweep& s,
                                 const std::vector<Variant>& variants,
                                 const std::vector<Store::ImportedRun>& runs,
                                 const std::map<std::string, Snapshot>& snapshots,
                                 TimestampMs now) {
  for (const auto& [hash, files] : snapshots) {
    STORE_RETURN_IF_ERROR(store_internal::PutSnapshotTx(c, hash, files, now));
  }
  STORE_ASSIGN_OR_RETURN(
      Statement sweep,
      c.Prepare("INSERT INTO sweeps (name, state, spec_yaml, baseline_preset, scale, dataset, "
                "target_val_loss, seeds, gpus_per_run, priority, max_concurrent, max_attempts, "
                "created_ms, finished_ms, imported, imported_hardware) "
                "VALUES (?, 'succeeded', ?, '', ?, ?, ?, ?, ?, 0, 0, 1, ?, ?, 1, ?)"));
  sweep.BindAll(s.name, s.spec_yaml, s.scale, s.dataset, s.target_val_loss, s.seeds,
                s.gpus_per_run, now, now, s.imported_hardware);
  STORE_RETURN_IF_ERROR(sweep.Run());
  const int64_t sweep_id = c.LastInsertId();
  std::vector<int64_t> variant_ids;
  STORE_ASSIGN_OR_RETURN(
      Statement variant,
      c.Prepare("INSERT INTO variants (sweep_id, idx, name, config_json, config_hash, diff_json) "
                "VALUES (?, ?, ?, ?, ?, '{}')"));
  for (const Variant& v : variants) {
    variant.Reset();
    variant.BindAll(sweep_id, v.index, v.name, v.config_json, v.config_hash);
    STORE_RETURN_IF_ERROR(variant.Run());
    variant_ids.push_back(c.LastInsertId());
  }
  STORE_ASSIGN_OR_RETURN(
      Statement run,
      c.Prepare("INSERT INTO runs (sweep_id, variant_id, seed, state, attempts_used, worker_id, "
                "final_val_loss, time_to_target_ms, target_step, reached_target, steps, "
                "mean_step_ms, train_time_ms, created_ms, started_ms, finished_ms, "
                "dispatch_order) VALUES (?, ?, ?, 'succeeded', 0, 'imported', ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?)"));
  STORE_ASSIGN_OR_RETURN(
      Statement attempt,
      c.Prepare("INSERT INTO attempts (run_id, number, fencing_token, worker_id, state, "
                "started_ms, finished_ms) VALUES (?, 1, 0, 'imported', 'succeeded', ?, ?)"));
  STORE_ASSIGN_OR_RETURN(Statement current,
                         c.Prepare("UPDATE runs SET current_attempt_id = ? WHERE id = ?"));
  STORE_ASSIGN_OR_RETURN(
      Statement point,
      c.Prepare("INSERT INTO metrics (attempt_id, step, run_id, train_loss, val_loss, step_ms, "
                "train_time_ms) VALUES (?, ?, ?, ?, ?, ?, ?)"));
  STORE_ASSIGN_OR_RETURN(
      Statement log,
      c.Prepare("INSERT INTO imported_logs (run_id, file_name, log_sha256, logged_hardware, "
                "script_hash, total_steps, timed_from_step) VALUES (?, ?, ?, ?, ?, ?, ?)"));
  std::map<int, int> seeds;  // variant index -> next seed
  int64_t order = 0;
  for (const Store::ImportedRun& r : runs) {
    if (r.variant_index < 0 || r.variant_index >= static_cast<int>(variant_ids.size())) {
      return absl::InvalidArgumentError("an imported run names a variant the sweep lacks");
    }
    const RunSummary& m = r.summary;
    run.Reset();
    run.BindAll(sweep_id, variant_ids[r.variant_index], seeds[r.variant_index]++,
                m.final_val_loss, m.time_to_target_ms, m.target_step,
                int64_t{m.reached_target ? 1 : 0}, m.steps, m.mean_step_ms, m.train_time_ms, now,
                now, now, order++);
    STORE_RETURN_IF_ERROR(run.Run());
    const int64_t run_id = c.LastInsertId();
    attempt.Reset();
    attempt.BindAll(run_id, now, now);
    STORE_RETURN_IF_ERROR(attempt.Run());
    const int64_t attempt_id = c.LastInsertId();
    current.Reset();
    current.BindAll(attempt_id, run_id);
    STORE_RETURN_IF_ERROR(current.Run());
    for (const MetricPoint& p : r.points) {
      point.Reset();
      point.BindAll(attempt_id, p.step, run_id, p.train_loss, p.val_loss, p.step_ms,
                    p.train_time_ms);
      STORE_RETURN_IF_ERROR(point.Run());
    }
    log.Reset();
    log.BindAll(run_id, r.log.file_name, r.log.log_sha256, r.log.logged_hardware,
                r.log.script_hash, r.log.total_steps, r.log.timed_from_step);
    STORE_RETURN_IF_ERROR(log.Run());
  }
  STORE_RETURN_IF_ERROR(store_internal::StateEvent(
      c, sweep_id, 0, now,
      absl::StrCat("sweep imported: ", variants.size(), " variants, ", runs.size(),
                   " runs from record logs")));
  return sweep_id;
}

}  // namespace

absl::StatusOr<int64_t> Store::ImportSweep(Sweep sweep, const std::vector<Variant>& variants,
                                           const std::vector<ImportedRun>& runs,
                                           const std::map<std::string, Snapshot>& snapshots) {
  if (variants.empty() || runs.empty()) {
    return absl::InvalidArgumentError("an import needs at least one log");
  }
  for (const auto& [hash, files] : snapshots) {
    if (hash.size() != 64) return absl::InvalidArgumentError("snapshot hash must be 64 hex digits");
    if (absl::Status s = CheckSnapshot(files); !s.ok()) return s;
  }
  const TimestampMs now = Now();
  return Write<int64_t>(
      [&](Connection& c) { return ImportTx(c, sweep, variants, runs, snapshots, now); });
}

absl::StatusOr<std::map<int64_t, ImportedLogInfo>> Store::ListImportedLogs(
    int64_t sweep_id) const {
  using Logs = std::map<int64_t, ImportedLogInfo>;
  return Read<Logs>([&](Connection& c) -> absl::StatusOr<Logs> {
    STORE_ASSIGN_OR_RETURN(
        Statement stmt,
        c.Prepare("SELECT l.run_id, l.file_name, l.log_sha256, l.logged_hardware, l.script_hash, "
                  "l.total_steps, l.timed_from_step FROM imported_logs l JOIN runs r ON "
                  "r.id = l.run_id WHERE r.sweep_id = ?"));
    stmt.BindAll(sweep_id);
    Logs out;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      out[stmt.Int(0)] = {stmt.Text(1), stmt.Text(2), stmt.Text(3), stmt.Text(4), stmt.Int(5),
                          stmt.Int(6)};
    }
    return out;
  });
}

}  // namespace ablate
