// Store: metric batches (idempotent per attempt and sequence number) and curves for charts; a
// run's curve continues across the attempts that resumed from checkpoints.
#include <algorithm>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/store/connection.h"
#include "server/store/downsample.h"
#include "server/store/fence_cache.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"
#include "server/store/store.h"
#include "server/store/store_queries.h"
#include "server/store/summary_check.h"
#include "server/store/writer.h"

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

// A point for a step already stored merges into it (fields it sets win): a step's train point
// and its val point may come in two batches when a batch is cut between them.
constexpr char kUpsertPoint[] =
    "INSERT INTO metrics (attempt_id, step, run_id, train_loss, val_loss, lr, step_ms, "
    "train_time_ms, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (attempt_id, step) DO UPDATE SET "
    "train_loss = COALESCE(excluded.train_loss, train_loss), "
    "val_loss = COALESCE(excluded.val_loss, val_loss), lr = COALESCE(excluded.lr, lr), "
    "step_ms = COALESCE(excluded.step_ms, step_ms), "
    "train_time_ms = COALESCE(excluded.train_time_ms, train_time_ms), "
    "tokens = COALESCE(excluded.tokens, tokens)";

absl::StatusOr<bool> AppendTx(Connection& c, FenceCache& fences, int64_t run_id, int64_t attempt_id,
                              int64_t token, int64_t seq, const std::vector<MetricPoint>& points,
                              std::optional<int64_t> resumed_from_step, TimestampMs now) {
  // From memory when this attempt passed the check and nothing but appends was written since.
  if (!fences.Knows(run_id, attempt_id, token)) {
    STORE_RETURN_IF_ERROR(CheckWriter(c, run_id, attempt_id, token));
    fences.Remember(run_id, attempt_id, token);
  }
  STORE_ASSIGN_OR_RETURN(bool claimed, ClaimBatch(c, attempt_id, seq, points.size(), now));
  if (!claimed) return true;  // duplicate
  STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(kUpsertPoint));
  for (const MetricPoint& p : points) {
    stmt.Reset();
    stmt.BindAll(attempt_id, p.step, run_id, p.train_loss, p.val_loss, p.lr, p.step_ms,
                 p.train_time_ms, p.tokens);
    STORE_RETURN_IF_ERROR(stmt.Run());
  }
  if (resumed_from_step) {
    // With the attempt's first points, so that a reader never sees them without the earlier
    // attempts' points they continue (the curve only grows while an attempt is current).
    STORE_ASSIGN_OR_RETURN(
        Statement mark, c.Prepare("UPDATE attempts SET resumed_from_step = ? "
                                  "WHERE id = ? AND resumed_from_step IS NULL"));
    mark.BindAll(*resumed_from_step, attempt_id);
    STORE_RETURN_IF_ERROR(mark.Run());
  }
  return false;
}

// One attempt's share of a run's curve: its points with step in [from, upto].
struct Segment {
  int64_t attempt_id = 0;
  int64_t from = INT64_MIN;
  int64_t upto = INT64_MAX;
};

// The attempts whose points make up a run's curve, oldest first. The head is the run's latest
// attempt (its current one, or the last while requeued); an attempt that resumed from a
// checkpoint with s steps done continues the curve of the attempts before it, cut after step s
// (both may have a point at step s: a checkpoint written when the trainer was stopped has not
// run that step's validation, and the resumed trainer runs it).
// An earlier attempt that never reported a point is passed over (it may have died before its
// first one). `skip_empty_head`: a head without points is passed over too (what a new attempt
// may resume from); otherwise it is the whole curve (empty until its first points arrive).
absl::StatusOr<std::vector<Segment>> CurveSegments(Connection& c, int64_t run_id,
                                                   bool skip_empty_head) {
  STORE_RETURN_IF_ERROR(LoadRun(c, run_id).status());  // NOT_FOUND for an unknown run
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("SELECT a.id, a.resumed_from_step, "
                "EXISTS (SELECT 1 FROM metrics m WHERE m.attempt_id = a.id) "
                "FROM attempts a WHERE a.run_id = ? ORDER BY a.id DESC"));
  stmt.BindAll(run_id);
  std::vector<Segment> newest_first;
  int64_t upto = INT64_MAX;
  for (bool head = true;; head = false) {
    STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    const std::optional<int64_t> resumed = stmt.OptInt(1);
    const bool has_points = stmt.Int(2) != 0;
    if (!has_points && !resumed && !(head && !skip_empty_head)) continue;
    if (!newest_first.empty()) newest_first.back().from = upto;
    newest_first.push_back(Segment{stmt.Int(0), INT64_MIN, upto});
    if (!resumed) break;
    upto = std::min(upto, *resumed);
  }
  return std::vector<Segment>(newest_first.rbegin(), newest_first.rend());
}

// `newer`'s fields where it has them, else `older`'s (one step reported by two attempts).
void MergePoint(const MetricPoint& newer, MetricPoint& older) {
  auto take = [](const auto& from, auto& to) {
    if (from) to = from;
  };
  take(newer.train_loss, older.train_loss);
  take(newer.val_loss, older.val_loss);
  take(newer.lr, older.lr);
  take(newer.step_ms, older.step_ms);
  take(newer.train_time_ms, older.train_time_ms);
  take(newer.tokens, older.tokens);
}

// Points of the segments with step > after_step, in step order, at most `limit` (0: all).
absl::StatusOr<std::vector<MetricPoint>> LoadPoints(Connection& c,
                                                    const std::vector<Segment>& segments,
                                                    int64_t after_step, int limit) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare(absl::StrCat("SELECT ", kMetricColumns,
                             " FROM metrics WHERE attempt_id = ? AND step > ? AND step >= ? "
                             "AND step <= ? ORDER BY step LIMIT ?")));
  std::vector<MetricPoint> points;
  for (const Segment& s : segments) {
    const int64_t left = limit > 0 ? limit - static_cast<int64_t>(points.size()) : -1;
    if (left == 0) break;
    stmt.Reset();
    stmt.BindAll(s.attempt_id, after_step, s.from, s.upto, left);
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      MetricPoint p = ReadMetricPoint(stmt);
      if (!points.empty() && points.back().step == p.step) {
        MergePoint(p, points.back());
      } else {
        points.push_back(std::move(p));
      }
    }
  }
  return points;
}

// Calls `fn` with each point of the segments in step order, one per step (as LoadPoints returns
// them, without holding them).
absl::Status ForEachPoint(Connection& c, const std::vector<Segment>& segments,
                          absl::FunctionRef<void(const MetricPoint&)> fn) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare(absl::StrCat("SELECT ", kMetricColumns,
                             " FROM metrics WHERE attempt_id = ? AND step >= ? AND step <= ? "
                             "ORDER BY step")));
  std::optional<MetricPoint> pending;  // the last step read: the next segment may merge into it
  for (const Segment& s : segments) {
    stmt.Reset();
    stmt.BindAll(s.attempt_id, s.from, s.upto);
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      MetricPoint p = ReadMetricPoint(stmt);
      if (pending && pending->step == p.step) {
        MergePoint(p, *pending);
        continue;
      }
      if (pending) fn(*pending);
      pending = std::move(p);
    }
  }
  if (pending) fn(*pending);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RunSummary> Store::SupportedSummary(int64_t run_id, double target_val_loss,
                                                   const RunSummary& claimed) const {
  return Read<RunSummary>([&](Connection& c) -> absl::StatusOr<RunSummary> {
    STORE_ASSIGN_OR_RETURN(std::vector<Segment> segments, CurveSegments(c, run_id, false));
    SummaryCheck check(target_val_loss, claimed);
    STORE_RETURN_IF_ERROR(
        ForEachPoint(c, segments, [&check](const MetricPoint& p) { check.Add(p); }));
    return check.Result();
  });
}

absl::StatusOr<std::vector<int64_t>> Store::CommittedBatchSeqs(int64_t attempt_id) const {
  using Seqs = std::vector<int64_t>;
  return Read<Seqs>([&](Connection& c) -> absl::StatusOr<Seqs> {
    STORE_ASSIGN_OR_RETURN(
        Statement stmt,
        c.Prepare("SELECT seq FROM metric_batches WHERE attempt_id = ? ORDER BY seq"));
    stmt.BindAll(attempt_id);
    Seqs seqs;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return seqs;
      seqs.push_back(stmt.Int(0));
    }
  });
}

absl::StatusOr<bool> Store::AppendMetrics(int64_t run_id, int64_t attempt_id, int64_t fencing_token,
                                          int64_t seq, const std::vector<MetricPoint>& points,
                                          std::optional<int64_t> resumed_from_step) {
  TimestampMs now = Now();
  // kKeep: an append changes no attempt's standing, so the fence cache stays valid.
  return Write<bool>(
      [&](Connection& c) {
        return AppendTx(c, *fences_, run_id, attempt_id, fencing_token, seq, points,
                        resumed_from_step, now);
      },
      Fences::kKeep);
}

bool Store::AppendMetricsLater(int64_t run_id, int64_t attempt_id, int64_t fencing_token,
                               int64_t seq, std::vector<MetricPoint> points,
                               std::optional<int64_t> resumed_from_step, AppendDone done) {
  struct Append {
    std::vector<MetricPoint> points;
    absl::StatusOr<bool> duplicate = false;
  };
  auto append = std::make_shared<Append>();
  append->points = std::move(points);
  const TimestampMs now = Now();
  // Not through WriteTx (it blocks): kKeep as AppendMetrics, the disk-full message as WriteTx's.
  return writer_->Post(
      [=, this](Connection& c) {
        append->duplicate = AppendTx(c, *fences_, run_id, attempt_id, fencing_token, seq,
                                     append->points, resumed_from_step, now);
        return append->duplicate.status();
      },
      [append, done = std::move(done), this](const absl::Status& status) {
        if (status.ok()) return done(append->duplicate);
        const bool full = status.code() == absl::StatusCode::kResourceExhausted &&
                          absl::StrContains(status.message(), "disk is full");
        done(full ? DiskFull(status) : status);
      });
}

absl::StatusOr<MetricCurve> Store::GetMetrics(int64_t run_id, int max_points) const {
  if (max_points < 0 || max_points == 1) {
    return absl::InvalidArgumentError("max_points must be 0 (the default, 2000) or at least 2");
  }
  return Read<MetricCurve>([&](Connection& c) -> absl::StatusOr<MetricCurve> {
    MetricCurve curve;
    curve.run_id = run_id;
    STORE_ASSIGN_OR_RETURN(std::vector<Segment> segments, CurveSegments(c, run_id, false));
    curve.attempt_id = segments.empty() ? 0 : segments.back().attempt_id;
    STORE_ASSIGN_OR_RETURN(std::vector<MetricPoint> points,
                           LoadPoints(c, segments, INT64_MIN, 0));
    curve.total_points = static_cast<int64_t>(points.size());
    STORE_ASSIGN_OR_RETURN(curve.points, DownsampleMinMax(points, max_points));
    return curve;
  });
}

absl::StatusOr<std::vector<MetricPoint>> Store::ListMetricPoints(int64_t run_id, int64_t after_step,
                                                                 int limit) const {
  using Points = std::vector<MetricPoint>;
  return Read<Points>([&](Connection& c) -> absl::StatusOr<Points> {
    STORE_ASSIGN_OR_RETURN(std::vector<Segment> segments, CurveSegments(c, run_id, false));
    return LoadPoints(c, segments, after_step, limit);
  });
}

absl::StatusOr<std::vector<std::vector<MetricPoint>>> Store::ListMetricPointsOfRuns(
    std::span<const PointsAfter> runs, int limit) const {
  using Answers = std::vector<std::vector<MetricPoint>>;
  return Read<Answers>([&](Connection& c) -> absl::StatusOr<Answers> {
    Answers answers;
    answers.reserve(runs.size());
    for (const PointsAfter& run : runs) {
      STORE_ASSIGN_OR_RETURN(std::vector<Segment> segments,
                             CurveSegments(c, run.run_id, false));
      STORE_ASSIGN_OR_RETURN(answers.emplace_back(),
                             LoadPoints(c, segments, run.after_step, limit));
    }
    return answers;
  });
}

absl::StatusOr<int64_t> Store::ResumeLimit(int64_t run_id) const {
  return Read<int64_t>([&](Connection& c) -> absl::StatusOr<int64_t> {
    STORE_ASSIGN_OR_RETURN(std::vector<Segment> segments, CurveSegments(c, run_id, true));
    STORE_ASSIGN_OR_RETURN(
        Statement stmt,
        c.Prepare("SELECT step, val_loss IS NOT NULL FROM metrics "
                  "WHERE attempt_id = ? AND step >= ? AND step <= ? ORDER BY step DESC LIMIT 1"));
    for (auto s = segments.rbegin(); s != segments.rend(); ++s) {
      stmt.Reset();
      stmt.BindAll(s->attempt_id, s->from, s->upto);
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) continue;
      // A val point follows its step's train point: without it, the last step may still lack
      // a validation that a checkpoint at that step would not run again.
      return std::max<int64_t>(0, stmt.Int(1) != 0 ? stmt.Int(0) : stmt.Int(0) - 1);
    }
    return int64_t{0};
  });
}

}  // namespace ablate
