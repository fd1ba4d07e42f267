// Store: attempts and the run lifecycle they drive (assigned -> running -> succeeded / failed /
// requeued), guarded by fencing tokens so that a stale worker can change nothing.
#include <random>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/core/slurm_worker_id.h"
#include "server/store/absl_compat.h"
#include "server/store/connection.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"
#include "server/store/store.h"
#include "server/store/store_queries.h"

namespace ablate {

using store_internal::LoadAttempt;
using store_internal::LoadRun;
using store_internal::LoadSweep;
using store_internal::RefreshSweepState;
using store_internal::StateEvent;

namespace {

// A fencing token nobody can guess (DESIGN §4, Trust): 63 random bits from the system's CSPRNG,
// never an attempt number, never 0.
int64_t NewFencingToken(int number) {
  static absl::Mutex mu(absl::kConstInit);
  static std::random_device device ABSL_GUARDED_BY(mu);  // /dev/urandom
  absl::MutexLock lock(&mu);
  while (true) {
    uint64_t bits = (uint64_t{device()} << 32) | device();
    const int64_t token = static_cast<int64_t>(bits >> 1);
    if (token > 1024 && token != number) return token;
  }
}

bool IsFinished(AttemptState s) {
  return s != AttemptState::kAssigned && s != AttemptState::kRunning;
}

// Only the run's current attempt, presenting its own token, may act for the run.
absl::Status CheckFencing(const Run& run, const Attempt& attempt, int64_t fencing_token) {
  if (run.current_attempt_id == attempt.id && attempt.fencing_token == fencing_token) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "stale attempt ", attempt.id, " (fencing token ", fencing_token, ") for run ", run.id,
      ": its current attempt is ", run.current_attempt_id, "; this worker must stop the run"));
}

// The fields of a run that the lifecycle changes.
struct RunUpdate {
  RunState state;
  int attempts_used;
  int64_t current_attempt_id;
  std::string worker_id;
  std::string error;
  TimestampMs started_ms;
  TimestampMs finished_ms;
};

RunUpdate UpdateOf(const Run& run) {
  return {run.state, run.attempts_used, run.current_attempt_id, run.worker_id,
          run.error, run.started_ms,    run.finished_ms};
}

// Writes `u` to the run, logs the state change (if any) and refreshes the sweep.
absl::Status ApplyRunUpdate(Connection& c, const Run& run, const RunUpdate& u, TimestampMs now,
                            std::string_view why) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("UPDATE runs SET state = ?, attempts_used = ?, current_attempt_id = ?, "
                "worker_id = ?, error = ?, started_ms = ?, finished_ms = ? WHERE id = ?"));
  stmt.BindAll(RunStateName(u.state), u.attempts_used, u.current_attempt_id, u.worker_id, u.error,
               u.started_ms, u.finished_ms, run.id);
  STORE_RETURN_IF_ERROR(stmt.Run());
  if (u.state != run.state) {
    STORE_RETURN_IF_ERROR(
        StateEvent(c, run.sweep_id, run.id, now,
                   absl::StrCat("run ", run.id, " ", ToAbsl(RunStateName(run.state)), " -> ",
                                ToAbsl(RunStateName(u.state)), ": ", ToAbsl(why))));
  }
  return RefreshSweepState(c, run.sweep_id, now);
}

absl::Status SetAttemptState(Connection& c, int64_t attempt_id, AttemptState state,
                             TimestampMs finished_ms) {
  STORE_ASSIGN_OR_RETURN(Statement stmt,
                         c.Prepare("UPDATE attempts SET state = ?, finished_ms = ? WHERE id = ?"));
  stmt.BindAll(AttemptStateName(state), finished_ms, attempt_id);
  return stmt.Run();
}

absl::Status WriteSummary(Connection& c, int64_t run_id, const RunSummary& s) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("UPDATE runs SET final_val_loss = ?, time_to_target_ms = ?, target_step = ?, "
                "reached_target = ?, steps = ?, mean_step_ms = ?, train_time_ms = ? "
                "WHERE id = ?"));
  stmt.BindAll(s.final_val_loss, s.time_to_target_ms, s.target_step, s.reached_target, s.steps,
               s.mean_step_ms, s.train_time_ms, run_id);
  STORE_RETURN_IF_ERROR(stmt.Run());
  if (c.Changes() == 0) return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  return absl::OkStatus();
}

absl::StatusOr<Attempt> CreateAttemptTx(Connection& c, int64_t run_id, const std::string& worker_id,
                                        const std::string& slurm_step_id, TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(Run run, LoadRun(c, run_id));
  if (run.state != RunState::kQueued) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " is ", ToAbsl(RunStateName(run.state)), ", not queued"));
  }
  STORE_ASSIGN_OR_RETURN(
      Statement last, c.Prepare("SELECT COALESCE(MAX(number), 0) FROM attempts WHERE run_id = ?"));
  last.BindAll(run_id);
  STORE_RETURN_IF_ERROR(last.Step().status());
  Attempt a;
  a.run_id = run_id;
  a.number = static_cast<int>(last.Int(0)) + 1;
  a.fencing_token = NewFencingToken(a.number);
  a.worker_id = worker_id;
  a.started_ms = now;
  STORE_ASSIGN_OR_RETURN(
      Statement insert,
      c.Prepare("INSERT INTO attempts (run_id, number, fencing_token, worker_id, state, "
                "started_ms, slurm_job_id, slurm_step_id) VALUES (?, ?, ?, ?, 'assigned', ?, ?, ?)"));
  // A Slurm pilot's id names its allocation: the attempt records the job it runs in.
  std::optional<SlurmWorkerRef> slurm = ParseSlurmWorkerId(worker_id);
  a.slurm_job_id = slurm ? slurm->job_id : 0;
  a.slurm_step_id = slurm ? slurm_step_id : "";
  insert.BindAll(a.run_id, a.number, a.fencing_token, a.worker_id, a.started_ms, a.slurm_job_id,
                 a.slurm_step_id);
  STORE_RETURN_IF_ERROR(insert.Run());
  a.id = c.LastInsertId();
  RunUpdate u = UpdateOf(run);
  u.state = RunState::kAssigned;
  u.current_attempt_id = a.id;
  u.worker_id = worker_id;
  STORE_RETURN_IF_ERROR(
      ApplyRunUpdate(c, run, u, now, absl::StrCat("attempt ", a.number, " on worker ", worker_id)));
  return a;
}

absl::Status MarkRunningTx(Connection& c, int64_t attempt_id, int64_t token, TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(Attempt attempt, LoadAttempt(c, attempt_id));
  STORE_ASSIGN_OR_RETURN(Run run, LoadRun(c, attempt.run_id));
  STORE_RETURN_IF_ERROR(CheckFencing(run, attempt, token));
  if (attempt.state == AttemptState::kRunning) return absl::OkStatus();
  if (attempt.state != AttemptState::kAssigned) {
    return absl::FailedPreconditionError(absl::StrCat(
        "attempt ", attempt_id, " is ", ToAbsl(AttemptStateName(attempt.state)), ", not assigned"));
  }
  STORE_RETURN_IF_ERROR(SetAttemptState(c, attempt_id, AttemptState::kRunning, 0));
  if (run.state != RunState::kAssigned) return absl::OkStatus();  // e.g. cancelled meanwhile
  RunUpdate u = UpdateOf(run);
  u.state = RunState::kRunning;
  if (u.started_ms == 0) u.started_ms = now;
  return ApplyRunUpdate(c, run, u, now, absl::StrCat("trainer started on ", run.worker_id));
}

// How the run moves on when its current attempt ends with `result`.
RunUpdate NextRunState(const Run& run, int max_attempts, const AttemptResult& result,
                       TimestampMs now) {
  RunUpdate u = UpdateOf(run);
  if (IsTerminal(run.state)) return u;  // cancelled while running: stays cancelled
  const bool requeue =
      result.state == AttemptState::kCancelled ||
      (result.state == AttemptState::kFailed && run.attempts_used + 1 < max_attempts);
  if (result.state == AttemptState::kFailed) {
    u.attempts_used = run.attempts_used + 1;
    u.error = result.error;
  }
  if (requeue) {
    u.state = RunState::kQueued;
    u.current_attempt_id = 0;
    u.worker_id.clear();
    return u;
  }
  u.state = result.state == AttemptState::kSucceeded ? RunState::kSucceeded : RunState::kFailed;
  if (u.state == RunState::kSucceeded) u.error.clear();
  u.finished_ms = now;
  return u;
}

absl::StatusOr<Run> FinishTx(Connection& c, int64_t attempt_id, int64_t token,
                             const AttemptResult& result, TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(Attempt attempt, LoadAttempt(c, attempt_id));
  STORE_ASSIGN_OR_RETURN(Run run, LoadRun(c, attempt.run_id));
  STORE_RETURN_IF_ERROR(CheckFencing(run, attempt, token));
  if (IsFinished(attempt.state)) {
    return absl::FailedPreconditionError(absl::StrCat("attempt ", attempt_id, " already ended as ",
                                                      ToAbsl(AttemptStateName(attempt.state))));
  }
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("UPDATE attempts SET state = ?, exit_code = ?, error = ?, stderr_tail = ?, "
                "finished_ms = ? WHERE id = ?"));
  stmt.BindAll(AttemptStateName(result.state), result.exit_code, result.error, result.stderr_tail,
               now, attempt_id);
  STORE_RETURN_IF_ERROR(stmt.Run());
  if (result.summary.has_value()) {
    STORE_RETURN_IF_ERROR(WriteSummary(c, run.id, *result.summary));
  }
  STORE_ASSIGN_OR_RETURN(Sweep sweep, LoadSweep(c, run.sweep_id));
  RunUpdate u = NextRunState(run, sweep.max_attempts, result, now);
  STORE_RETURN_IF_ERROR(ApplyRunUpdate(
      c, run, u, now,
      absl::StrCat("attempt ", attempt.number, " ", ToAbsl(AttemptStateName(result.state)),
                   result.error.empty() ? "" : ": ", result.error)));
  return LoadRun(c, run.id);
}

absl::StatusOr<Run> LoseTx(Connection& c, int64_t attempt_id, const std::string& why,
                           TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(Attempt attempt, LoadAttempt(c, attempt_id));
  if (IsFinished(attempt.state)) {
    return absl::FailedPreconditionError(absl::StrCat("attempt ", attempt_id, " already ended as ",
                                                      ToAbsl(AttemptStateName(attempt.state))));
  }
  STORE_RETURN_IF_ERROR(SetAttemptState(c, attempt_id, AttemptState::kLost, now));
  if (!why.empty()) {
    STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare("UPDATE attempts SET error = ? WHERE id = ?"));
    stmt.BindAll(why, attempt_id);
    STORE_RETURN_IF_ERROR(stmt.Run());
  }
  STORE_ASSIGN_OR_RETURN(Run run, LoadRun(c, attempt.run_id));
  if (run.current_attempt_id != attempt_id || IsTerminal(run.state)) return run;
  RunUpdate u = UpdateOf(run);
  u.state = RunState::kQueued;  // infrastructure failure: attempts_used unchanged
  u.current_attempt_id = 0;
  u.worker_id.clear();
  STORE_RETURN_IF_ERROR(ApplyRunUpdate(
      c, run, u, now,
      absl::StrCat("worker ", attempt.worker_id, " lost", why.empty() ? "" : " (", why,
                   why.empty() ? "" : ")", "; requeued")));
  return LoadRun(c, run.id);
}

}  // namespace

absl::StatusOr<Attempt> Store::CreateAttempt(int64_t run_id, const std::string& worker_id,
                                             const std::string& slurm_step_id) {
  if (worker_id.empty()) return absl::InvalidArgumentError("empty worker id");
  TimestampMs now = Now();
  return Write<Attempt>(
      [&](Connection& c) { return CreateAttemptTx(c, run_id, worker_id, slurm_step_id, now); });
}

absl::StatusOr<Attempt> Store::GetAttempt(int64_t attempt_id) const {
  return Read<Attempt>([&](Connection& c) { return LoadAttempt(c, attempt_id); });
}

absl::StatusOr<std::vector<Attempt>> Store::ListAttempts(int64_t run_id) const {
  using Attempts = std::vector<Attempt>;
  return Read<Attempts>([&](Connection& c) -> absl::StatusOr<Attempts> {
    STORE_RETURN_IF_ERROR(LoadRun(c, run_id).status());
    STORE_ASSIGN_OR_RETURN(
        Statement stmt, c.Prepare(absl::StrCat("SELECT ", kAttemptColumns,
                                               " FROM attempts WHERE run_id = ? ORDER BY number")));
    stmt.BindAll(run_id);
    Attempts attempts;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return attempts;
      attempts.push_back(ReadAttempt(stmt));
    }
  });
}

absl::Status Store::MarkAttemptRunning(int64_t attempt_id, int64_t fencing_token) {
  TimestampMs now = Now();
  return WriteTx([&](Connection& c) { return MarkRunningTx(c, attempt_id, fencing_token, now); });
}

absl::StatusOr<Run> Store::FinishAttempt(int64_t attempt_id, int64_t fencing_token,
                                         const AttemptResult& result) {
  if (result.state != AttemptState::kSucceeded && result.state != AttemptState::kFailed &&
      result.state != AttemptState::kCancelled) {
    return absl::InvalidArgumentError(
        absl::StrCat("an attempt cannot finish as ", ToAbsl(AttemptStateName(result.state)),
                     "; use succeeded, failed or cancelled (LoseAttempt for a lost worker)"));
  }
  TimestampMs now = Now();
  return Write<Run>(
      [&](Connection& c) { return FinishTx(c, attempt_id, fencing_token, result, now); });
}

absl::StatusOr<Run> Store::LoseAttempt(int64_t attempt_id, const std::string& why) {
  TimestampMs now = Now();
  return Write<Run>([&](Connection& c) { return LoseTx(c, attempt_id, why, now); });
}

absl::Status Store::UpdateRunSummary(int64_t run_id, const RunSummary& summary) {
  return WriteTx([&](Connection& c) { return WriteSummary(c, run_id, summary); });
}

}  // namespace ablate
