// Queries shared by the Store's transactions (store*.cc): loading rows by id, writing events and
// keeping a sweep's state in step with its runs. Each runs on the connection it is given, inside
// the caller's transaction. Not part of the store's public API.
#ifndef ABLATE_SERVER_STORE_STORE_QUERIES_H_
#define ABLATE_SERVER_STORE_STORE_QUERIES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/code_snapshot.h"
#include "server/core/model.h"
#include "server/store/connection.h"

namespace ablate::store_internal {

// NOT_FOUND when the row does not exist.
absl::StatusOr<Sweep> LoadSweep(Connection& c, int64_t sweep_id);  // with tags
absl::StatusOr<Run> LoadRun(Connection& c, int64_t run_id);
absl::StatusOr<Attempt> LoadAttempt(Connection& c, int64_t attempt_id);
absl::Status CheckSweepExists(Connection& c, int64_t sweep_id);
// Runs of the sweep per state; states without runs are absent.
absl::StatusOr<std::map<RunState, int>> RunCounts(Connection& c, int64_t sweep_id);

// Inserts `event` as given (ids 0 stored as NULL) and returns its id.
absl::StatusOr<int64_t> InsertEvent(Connection& c, const Event& event);
// Shorthand for a "state" event.
absl::Status StateEvent(Connection& c, int64_t sweep_id, int64_t run_id, TimestampMs now,
                        std::string_view message);

// Moves the sweep to the state its runs imply (queued until a run starts, running until all are
// terminal, then failed if any failed, else succeeded) and writes an event when it changes. A
// cancelled sweep stays cancelled; a running sweep never goes back to queued.
absl::Status RefreshSweepState(Connection& c, int64_t sweep_id, TimestampMs now);

// Stores a code snapshot's rows unless that hash is stored already (store_snapshots.cc).
absl::Status PutSnapshotTx(Connection& c, const std::string& hash, const Snapshot& files,
                           TimestampMs now);

}  // namespace ablate::store_internal

#endif  // ABLATE_SERVER_STORE_STORE_QUERIES_H_
