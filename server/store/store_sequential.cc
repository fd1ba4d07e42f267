// Store: the runs a sequential sweep no longer needs (sequential seeds, DESIGN §7).
#include "absl/strings/str_cat.h"
#include "server/store/absl_compat.h"
#include "server/store/status_macros.h"
#include "server/store/store.h"
#include "server/store/store_queries.h"

namespace ablate {
namespace {

absl::StatusOr<int> SkipQueuedRunsTx(Connection& c, int64_t sweep_id,
                                     const std::vector<int64_t>& run_ids,
                                     const std::string& reason, TimestampMs now) {
  STORE_RETURN_IF_ERROR(store_internal::CheckSweepExists(c, sweep_id));
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("UPDATE runs SET state = 'cancelled', error = ?, finished_ms = ? "
                "WHERE id = ? AND sweep_id = ? AND state = 'queued'"));
  int skipped = 0;
  for (int64_t id : run_ids) {
    stmt.Reset();
    stmt.BindAll(reason, now, id, sweep_id);
    STORE_RETURN_IF_ERROR(stmt.Run());
    skipped += c.Changes();
  }
  if (skipped == 0) return 0;
  STORE_RETURN_IF_ERROR(store_internal::StateEvent(
      c, sweep_id, 0, now, absl::StrCat(skipped, " queued runs not needed: ", ToAbsl(reason))));
  STORE_RETURN_IF_ERROR(store_internal::RefreshSweepState(c, sweep_id, now));
  return skipped;
}

}  // namespace

absl::StatusOr<int> Store::SkipQueuedRuns(int64_t sweep_id, const std::vector<int64_t>& run_ids,
                                          const std::string& reason) {
  TimestampMs now = Now();
  return Write<int>(
      [&](Connection& c) { return SkipQueuedRunsTx(c, sweep_id, run_ids, reason, now); });
}

}  // namespace ablate
