// Store: workers (registration, connection, heartbeats) and the event log.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/store/connection.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"
#include "server/store/store.h"
#include "server/store/store_queries.h"
#include "server/store/writer.h"

namespace ablate {
namespace {

absl::Status WorkerNotFound(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("worker '", id, "' not found"));
}

absl::Status UpsertWorkerTx(Connection& c, const Worker& w, TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("INSERT INTO workers (id, host, gpus_json, cpu_slots, trainer_version, "
                "datasets_json, connected, last_heartbeat_ms, registered_ms) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "host = excluded.host, gpus_json = excluded.gpus_json, "
                "cpu_slots = excluded.cpu_slots, trainer_version = excluded.trainer_version, "
                "datasets_json = excluded.datasets_json, connected = excluded.connected, "
                "last_heartbeat_ms = excluded.last_heartbeat_ms"));
  stmt.BindAll(w.id, w.host, GpusToJson(w.gpus), w.cpu_slots, w.trainer_version,
               StringsToJson(w.datasets), w.connected,
               w.last_heartbeat_ms != 0 ? w.last_heartbeat_ms : now,
               w.registered_ms != 0 ? w.registered_ms : now);
  return stmt.Run();
}

// Runs an UPDATE on one worker; NOT_FOUND when no row matched.
template <class... Ts>
absl::Status UpdateWorker(Connection& c, std::string_view sql, const std::string& id,
                          const Ts&... values) {
  STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(sql));
  stmt.BindAll(values..., id);
  STORE_RETURN_IF_ERROR(stmt.Run());
  return c.Changes() == 0 ? WorkerNotFound(id) : absl::OkStatus();
}

absl::StatusOr<std::vector<Event>> ListEventsTx(Connection& c, int64_t sweep_id, int64_t run_id,
                                                int64_t after_id, int limit) {
  std::vector<std::string> where = {"id > ?"};
  if (sweep_id != 0) where.push_back("sweep_id = ?");
  if (run_id != 0) where.push_back("run_id = ?");
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare(absl::StrCat("SELECT ", kEventColumns, " FROM events WHERE ",
                             absl::StrJoin(where, " AND "), " ORDER BY id LIMIT ?")));
  int index = 1;
  stmt.Bind(index++, after_id);
  if (sweep_id != 0) stmt.Bind(index++, sweep_id);
  if (run_id != 0) stmt.Bind(index++, run_id);
  stmt.Bind(index++, limit > 0 ? limit : -1);
  std::vector<Event> events;
  while (true) {
    STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return events;
    events.push_back(ReadEvent(stmt));
  }
}

}  // namespace

absl::Status Store::UpsertWorker(const Worker& worker) {
  if (worker.id.empty()) return absl::InvalidArgumentError("empty worker id");
  TimestampMs now = Now();
  return WriteTx([&](Connection& c) { return UpsertWorkerTx(c, worker, now); });
}

absl::Status Store::SetWorkerConnected(const std::string& worker_id, bool connected) {
  return WriteTx([&](Connection& c) {
    return UpdateWorker(c, "UPDATE workers SET connected = ? WHERE id = ?", worker_id, connected);
  });
}

absl::Status Store::TouchWorker(const std::string& worker_id, TimestampMs now_ms) {
  return WriteTx([&](Connection& c) {
    return UpdateWorker(c, "UPDATE workers SET last_heartbeat_ms = ? WHERE id = ?", worker_id,
                        now_ms);
  });
}

void Store::TouchWorkerLater(const std::string& worker_id, TimestampMs now_ms) {
  // Not through WriteTx: a heartbeat changes no attempt, so the fence cache stays valid.
  writer_->Post([worker_id, now_ms](Connection& c) {
    return UpdateWorker(c, "UPDATE workers SET last_heartbeat_ms = ? WHERE id = ?", worker_id,
                        now_ms);
  });
}

absl::StatusOr<Worker> Store::GetWorker(const std::string& worker_id) const {
  return Read<Worker>([&](Connection& c) -> absl::StatusOr<Worker> {
    STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(absl::StrCat("SELECT ", kWorkerColumns,
                                                                  " FROM workers WHERE id = ?")));
    stmt.BindAll(worker_id);
    STORE_ASSIGN_OR_RETURN(bool found, stmt.Step());
    if (!found) return WorkerNotFound(worker_id);
    return ReadWorker(stmt);
  });
}

absl::StatusOr<std::vector<Worker>> Store::ListWorkers() const {
  using Workers = std::vector<Worker>;
  return Read<Workers>([&](Connection& c) -> absl::StatusOr<Workers> {
    STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(absl::StrCat("SELECT ", kWorkerColumns,
                                                                  " FROM workers ORDER BY id")));
    Workers workers;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return workers;
      workers.push_back(ReadWorker(stmt));
    }
  });
}

absl::StatusOr<int64_t> Store::AppendEvent(const Event& event) {
  Event stored = event;
  if (stored.time_ms == 0) stored.time_ms = Now();
  return Write<int64_t>([&](Connection& c) { return store_internal::InsertEvent(c, stored); });
}

absl::StatusOr<std::vector<Event>> Store::ListEvents(int64_t sweep_id, int64_t run_id,
                                                     int64_t after_id, int limit) const {
  using Events = std::vector<Event>;
  return Read<Events>(
      [&](Connection& c) { return ListEventsTx(c, sweep_id, run_id, after_id, limit); });
}

}  // namespace ablate
