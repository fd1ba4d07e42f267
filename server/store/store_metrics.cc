// Store: metric batches (idempotent per attempt and sequence number) and curves for charts.
#include "absl/strings/str_cat.h"
#include "server/store/connection.h"
#include "server/store/downsample.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"
#include "server/store/store.h"
#include "server/store/store_queries.h"

namespace ablate {

using store_internal::LoadRun;

namespace {

// The fencing check, in one lean query: the attempt's run and token and that run's current
// attempt (the full Attempt and Run rows are not needed on this per-batch path).
absl::Status CheckWriter(Connection& c, int64_t run_id, int64_t attempt_id, int64_t token) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("SELECT a.run_id, a.fencing_token, r.current_attempt_id "
                "FROM attempts a LEFT JOIN runs r ON r.id = a.run_id WHERE a.id = ?"));
  stmt.BindAll(attempt_id);
  STORE_ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("attempt ", attempt_id, " not found"));
  const int64_t owner = stmt.Int(0);
  if (owner != run_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("attempt ", attempt_id, " belongs to run ", owner, ", not run ", run_id));
  }
  if (stmt.IsNull(2)) return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  const int64_t current = stmt.Int(2);
  if (current == attempt_id && stmt.Int(1) == token) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("metrics from stale attempt ", attempt_id,
                                                    " (fencing token ", token, ") of run ", run_id,
                                                    " refused: its current attempt is ", current));
}

// Records the batch; false when (attempt_id, seq) was committed before.
absl::StatusOr<bool> ClaimBatch(Connection& c, int64_t attempt_id, int64_t seq, size_t points,
                                TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("INSERT INTO metric_batches (attempt_id, seq, points, committed_ms) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (attempt_id, seq) DO NOTHING"));
  stmt.BindAll(attempt_id, seq, points, now);
  STORE_RETURN_IF_ERROR(stmt.Run());
  return c.Changes() == 1;
}

absl::StatusOr<bool> AppendTx(Connection& c, int64_t run_id, int64_t attempt_id, int64_t token,
                              int64_t seq, const std::vector<MetricPoint>& points,
                              TimestampMs now) {
  STORE_RETURN_IF_ERROR(CheckWriter(c, run_id, attempt_id, token));
  STORE_ASSIGN_OR_RETURN(bool claimed, ClaimBatch(c, attempt_id, seq, points.size(), now));
  if (!claimed) return true;  // duplicate
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("INSERT OR REPLACE INTO metrics (attempt_id, step, run_id, train_loss, val_loss, "
                "lr, step_ms, train_time_ms, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  for (const MetricPoint& p : points) {
    stmt.Reset();
    stmt.BindAll(attempt_id, p.step, run_id, p.train_loss, p.val_loss, p.lr, p.step_ms,
                 p.train_time_ms, p.tokens);
    STORE_RETURN_IF_ERROR(stmt.Run());
  }
  return false;
}

// The attempt whose curve a run shows: the current one, or the latest while requeued.
absl::StatusOr<int64_t> CurveAttempt(Connection& c, int64_t run_id) {
  STORE_ASSIGN_OR_RETURN(Run run, LoadRun(c, run_id));
  if (run.current_attempt_id != 0) return run.current_attempt_id;
  STORE_ASSIGN_OR_RETURN(Statement stmt,
                         c.Prepare("SELECT COALESCE(MAX(id), 0) FROM attempts WHERE run_id = ?"));
  stmt.BindAll(run_id);
  STORE_RETURN_IF_ERROR(stmt.Step().status());
  return stmt.Int(0);
}

absl::StatusOr<std::vector<MetricPoint>> LoadPoints(Connection& c, int64_t attempt_id,
                                                    int64_t after_step, int limit) {
  STORE_ASSIGN_OR_RETURN(Statement stmt,
                         c.Prepare(absl::StrCat("SELECT ", kMetricColumns,
                                                " FROM metrics WHERE attempt_id = ? AND step > ? "
                                                "ORDER BY step LIMIT ?")));
  stmt.BindAll(attempt_id, after_step, limit > 0 ? limit : -1);
  std::vector<MetricPoint> points;
  while (true) {
    STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return points;
    points.push_back(ReadMetricPoint(stmt));
  }
}

}  // namespace

absl::StatusOr<bool> Store::AppendMetrics(int64_t run_id, int64_t attempt_id, int64_t fencing_token,
                                          int64_t seq, const std::vector<MetricPoint>& points) {
  TimestampMs now = Now();
  return Write<bool>([&](Connection& c) {
    return AppendTx(c, run_id, attempt_id, fencing_token, seq, points, now);
  });
}

absl::StatusOr<MetricCurve> Store::GetMetrics(int64_t run_id, int max_points) const {
  if (max_points < 0 || max_points == 1) {
    return absl::InvalidArgumentError("max_points must be 0 (the default, 2000) or at least 2");
  }
  return Read<MetricCurve>([&](Connection& c) -> absl::StatusOr<MetricCurve> {
    MetricCurve curve;
    curve.run_id = run_id;
    STORE_ASSIGN_OR_RETURN(curve.attempt_id, CurveAttempt(c, run_id));
    STORE_ASSIGN_OR_RETURN(std::vector<MetricPoint> points,
                           LoadPoints(c, curve.attempt_id, INT64_MIN, 0));
    curve.total_points = static_cast<int64_t>(points.size());
    STORE_ASSIGN_OR_RETURN(curve.points, DownsampleMinMax(points, max_points));
    return curve;
  });
}

absl::StatusOr<std::vector<MetricPoint>> Store::ListMetricPoints(int64_t run_id, int64_t after_step,
                                                                 int limit) const {
  using Points = std::vector<MetricPoint>;
  return Read<Points>([&](Connection& c) -> absl::StatusOr<Points> {
    STORE_ASSIGN_OR_RETURN(int64_t attempt_id, CurveAttempt(c, run_id));
    return LoadPoints(c, attempt_id, after_step, limit);
  });
}

}  // namespace ablate
