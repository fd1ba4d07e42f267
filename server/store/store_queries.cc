// Shared queries of the Store's transactions.
#include "server/store/store_queries.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/store/absl_compat.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"

namespace ablate::store_internal {
namespace {

absl::Status NotFound(std::string_view what, int64_t id) {
  return absl::NotFoundError(absl::StrCat(ToAbsl(what), " ", id, " not found"));
}

SweepState ImpliedState(SweepState current, const std::map<RunState, int>& counts) {
  int total = 0, terminal = 0, failed = 0, started = 0;
  for (const auto& [state, n] : counts) {
    total += n;
    if (IsTerminal(state)) terminal += n;
    if (state == RunState::kFailed) failed += n;
    if (state == RunState::kRunning || IsTerminal(state)) started += n;
  }
  if (total > 0 && terminal == total) {
    return failed > 0 ? SweepState::kFailed : SweepState::kSucceeded;
  }
  if (started > 0 || current == SweepState::kRunning) return SweepState::kRunning;
  return SweepState::kQueued;
}

}  // namespace

absl::StatusOr<Sweep> LoadSweep(Connection& c, int64_t sweep_id) {
  STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(absl::StrCat("SELECT ", kSweepColumns,
                                                                " FROM sweeps WHERE id = ?")));
  stmt.BindAll(sweep_id);
  STORE_ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found) return NotFound("sweep", sweep_id);
  Sweep sweep = ReadSweep(stmt);
  STORE_ASSIGN_OR_RETURN(Statement tags,
                         c.Prepare("SELECT tag FROM sweep_tags WHERE sweep_id = ? ORDER BY tag"));
  tags.BindAll(sweep_id);
  while (true) {
    STORE_ASSIGN_OR_RETURN(bool row, tags.Step());
    if (!row) return sweep;
    sweep.tags.push_back(tags.Text(0));
  }
}

absl::StatusOr<Run> LoadRun(Connection& c, int64_t run_id) {
  STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(absl::StrCat("SELECT ", kRunColumns, " FROM ",
                                                                kRunFrom, " WHERE r.id = ?")));
  stmt.BindAll(run_id);
  STORE_ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found) return NotFound("run", run_id);
  return ReadRun(stmt);
}

absl::StatusOr<Attempt> LoadAttempt(Connection& c, int64_t attempt_id) {
  STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(absl::StrCat("SELECT ", kAttemptColumns,
                                                                " FROM attempts WHERE id = ?")));
  stmt.BindAll(attempt_id);
  STORE_ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found) return NotFound("attempt", attempt_id);
  return ReadAttempt(stmt);
}

absl::StatusOr<std::map<RunState, int>> RunCounts(Connection& c, int64_t sweep_id) {
  std::map<RunState, int> counts;
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("SELECT state, COUNT(*) FROM runs WHERE sweep_id = ? GROUP BY state"));
  stmt.BindAll(sweep_id);
  while (true) {
    STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return counts;
    std::optional<RunState> state = ParseRunState(stmt.Text(0));
    if (state.has_value()) counts[*state] = static_cast<int>(stmt.Int(1));
  }
}

absl::Status CheckSweepExists(Connection& c, int64_t sweep_id) {
  STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare("SELECT 1 FROM sweeps WHERE id = ?"));
  stmt.BindAll(sweep_id);
  STORE_ASSIGN_OR_RETURN(bool found, stmt.Step());
  return found ? absl::OkStatus() : NotFound("sweep", sweep_id);
}

absl::StatusOr<int64_t> InsertEvent(Connection& c, const Event& event) {
  STORE_ASSIGN_OR_RETURN(Statement stmt,
                         c.Prepare("INSERT INTO events (sweep_id, run_id, time_ms, kind, message) "
                                   "VALUES (?, ?, ?, ?, ?)"));
  stmt.BindAll(NullIfZero(event.sweep_id), NullIfZero(event.run_id), event.time_ms, event.kind,
               event.message);
  STORE_RETURN_IF_ERROR(stmt.Run());
  return c.LastInsertId();
}

absl::Status StateEvent(Connection& c, int64_t sweep_id, int64_t run_id, TimestampMs now,
                        std::string_view message) {
  Event event;
  event.sweep_id = sweep_id;
  event.run_id = run_id;
  event.time_ms = now;
  event.kind = "state";
  event.message = std::string(message);
  return InsertEvent(c, event).status();
}

absl::Status RefreshSweepState(Connection& c, int64_t sweep_id, TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(Sweep sweep, LoadSweep(c, sweep_id));
  if (sweep.state == SweepState::kCancelled) return absl::OkStatus();
  STORE_ASSIGN_OR_RETURN(auto counts, RunCounts(c, sweep_id));
  SweepState next = ImpliedState(sweep.state, counts);
  if (next == sweep.state) return absl::OkStatus();
  bool finished = next == SweepState::kSucceeded || next == SweepState::kFailed;
  STORE_ASSIGN_OR_RETURN(Statement stmt,
                         c.Prepare("UPDATE sweeps SET state = ?, finished_ms = ? WHERE id = ?"));
  stmt.BindAll(SweepStateName(next), finished ? now : 0, sweep_id);
  STORE_RETURN_IF_ERROR(stmt.Run());
  return StateEvent(c, sweep_id, 0, now,
                    absl::StrCat("sweep ", ToAbsl(SweepStateName(sweep.state)), " -> ",
                                 ToAbsl(SweepStateName(next))));
}

}  // namespace ablate::store_internal
