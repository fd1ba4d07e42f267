// Store: opening and migrating the database, the read/write plumbing, and sweeps.
// Attempts, metrics, workers and events are in store_attempts.cc, store_metrics.cc and
// store_workers.cc.
#include "server/store/store.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <span>
#include <unordered_map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "server/store/absl_compat.h"
#include "server/store/checkpointer.h"
#include "server/store/connection.h"
#include "server/store/connection_pool.h"
#include "server/store/fence_cache.h"
#include "server/store/migrations.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"
#include "server/store/store_queries.h"
#include "server/store/writer.h"

namespace ablate {

using store_internal::CheckSweepExists;
using store_internal::LoadSweep;
using store_internal::RunCounts;
using store_internal::StateEvent;

namespace {

// A name no other store in this process uses: ":memory:" gives each Store its own database,
// shared by that store's writer and reader connections through the memdb VFS.
std::string UniqueMemoryUri() {
  static std::atomic<int64_t> counter{0};
  return absl::StrCat("file:/ablate-mem-", getpid(), "-", counter.fetch_add(1), "?vfs=memdb");
}

std::span<const Migration> KnownMigrations(int max_migrations) {
  std::span<const Migration> all = EmbeddedMigrations();
  if (max_migrations > 0 && static_cast<size_t>(max_migrations) < all.size()) {
    return all.first(static_cast<size_t>(max_migrations));
  }
  return all;
}

absl::Status InsertTags(Connection& c, int64_t sweep_id, const std::vector<std::string>& tags) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt, c.Prepare("INSERT OR IGNORE INTO sweep_tags (sweep_id, tag) VALUES (?, ?)"));
  for (const std::string& tag : tags) {
    stmt.Reset();
    stmt.BindAll(sweep_id, tag);
    STORE_RETURN_IF_ERROR(stmt.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> InsertSweepRow(Connection& c, const Sweep& s) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare(
          "INSERT INTO sweeps (name, state, spec_yaml, baseline_preset, scale, dataset, "
          "target_val_loss, seeds, gpus_per_run, priority, max_concurrent, max_attempts, "
          "created_ms, finished_ms, seeds_min, order_seed, pool, checkpoint_every_ms) "
          "VALUES (?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)"));
  stmt.BindAll(s.name, s.spec_yaml, s.baseline_preset, s.scale, s.dataset, s.target_val_loss,
               s.seeds, s.gpus_per_run, s.priority, s.max_concurrent, s.max_attempts, s.created_ms,
               s.seeds_min, s.order_seed, s.pool, s.checkpoint_every_ms);
  STORE_RETURN_IF_ERROR(stmt.Run());
  return c.LastInsertId();
}

// Returns variant index -> variant id.
absl::StatusOr<std::unordered_map<int64_t, int64_t>> InsertVariants(
    Connection& c, int64_t sweep_id, const std::vector<Variant>& variants) {
  std::unordered_map<int64_t, int64_t> ids;
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("INSERT INTO variants (sweep_id, idx, name, config_json, config_hash, diff_json, "
                "same_work) VALUES (?, ?, ?, ?, ?, ?, ?)"));
  for (const Variant& v : variants) {
    stmt.Reset();
    stmt.BindAll(sweep_id, v.index, v.name, v.config_json, v.config_hash, v.diff_json,
                 int64_t{v.same_work ? 1 : 0});
    STORE_RETURN_IF_ERROR(stmt.Run());
    ids[v.index] = c.LastInsertId();
  }
  return ids;
}

absl::Status InsertRuns(Connection& c, int64_t sweep_id, TimestampMs created_ms,
                        const std::unordered_map<int64_t, int64_t>& variant_ids,
                        const std::vector<Run>& runs) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("INSERT INTO runs (sweep_id, variant_id, seed, state, created_ms, dispatch_order) "
                "VALUES (?, ?, ?, 'queued', ?, ?)"));
  for (const Run& run : runs) {
    auto it = variant_ids.find(run.variant_id);
    if (it == variant_ids.end()) {
      return absl::InvalidArgumentError(absl::StrCat("run with seed ", run.seed,
                                                     " names variant index ", run.variant_id,
                                                     ", which the sweep does not have"));
    }
    stmt.Reset();
    stmt.BindAll(sweep_id, it->second, run.seed, created_ms, run.dispatch_order);
    STORE_RETURN_IF_ERROR(stmt.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CreateSweepTx(Connection& c, Sweep sweep,
                                      const std::vector<Variant>& variants,
                                      const std::vector<Run>& runs, TimestampMs now) {
  if (sweep.created_ms == 0) sweep.created_ms = now;
  STORE_ASSIGN_OR_RETURN(int64_t id, InsertSweepRow(c, sweep));
  STORE_RETURN_IF_ERROR(InsertTags(c, id, sweep.tags));
  STORE_ASSIGN_OR_RETURN(auto variant_ids, InsertVariants(c, id, variants));
  STORE_RETURN_IF_ERROR(InsertRuns(c, id, sweep.created_ms, variant_ids, runs));
  STORE_RETURN_IF_ERROR(StateEvent(
      c, id, 0, now,
      absl::StrCat("sweep submitted: ", variants.size(), " variants, ", runs.size(), " runs")));
  return id;
}

// "WHERE a AND b" for the non-empty conditions, or "".
std::string WhereClause(const std::vector<std::string>& conditions) {
  if (conditions.empty()) return "";
  return absl::StrCat(" WHERE ", absl::StrJoin(conditions, " AND "));
}

// SQLite: LIMIT -1 means no limit.
int SqlLimit(int limit) { return limit > 0 ? limit : -1; }

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(std::string path, StoreOptions options) {
  if (path.empty()) return absl::InvalidArgumentError("empty database path");
  ConnectionOptions base;
  base.busy_timeout_ms = options.busy_timeout_ms;
  std::string filename = path;
  if (path == ":memory:") {
    filename = UniqueMemoryUri();
    base.uri = true;
    base.wal = false;  // in-memory databases have no WAL
  }
  STORE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> writer_connection,
                         Connection::Open(filename, base));
  const TimestampMs now = options.clock->WallMs();
  STORE_ASSIGN_OR_RETURN(
      int version,
      ApplyMigrations(*writer_connection, KnownMigrations(options.max_migrations), path, now));

  ConnectionOptions reader_options = base;
  reader_options.wal = false;  // the database is already in WAL mode; readers only read
  reader_options.read_only = true;
  auto readers = std::make_unique<ConnectionPool>(
      [filename, reader_options] { return Connection::Open(filename, reader_options); },
      options.max_idle_readers);
  {
    // Fail at Open rather than at the first read when readers cannot connect.
    STORE_ASSIGN_OR_RETURN(ConnectionPool::Lease probe, readers->Acquire());
  }
  std::unique_ptr<Checkpointer> checkpointer;
  if (base.wal) {
    STORE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> own, Connection::Open(filename, base));
    const size_t slash = path.find_last_of('/');
    checkpointer = std::make_unique<Checkpointer>(
        std::move(own), writer_connection->handle(), Checkpointer::kPages,
        Checkpointer::kInlinePages,
        Checkpointer::FreeBytesOf(slash == std::string::npos ? "." : path.substr(0, slash + 1)));
  }
  auto fences = std::make_shared<FenceCache>();
  auto writer = std::make_unique<Writer>(std::move(writer_connection), options.max_batch,
                                         [fences] { fences->Clear(); });
  return std::unique_ptr<Store>(new Store(std::move(path), std::move(options), version,
                                          std::move(readers), std::move(fences),
                                          std::move(checkpointer), std::move(writer)));
}

Store::Store(std::string path, StoreOptions options, int schema_version,
             std::unique_ptr<ConnectionPool> readers, std::shared_ptr<FenceCache> fences,
             std::unique_ptr<Checkpointer> checkpointer, std::unique_ptr<Writer> writer)
    : path_(std::move(path)),
      options_(std::move(options)),
      schema_version_(schema_version),
      readers_(std::move(readers)),
      fences_(std::move(fences)),
      checkpointer_(std::move(checkpointer)),
      writer_(std::move(writer)) {}

Store::~Store() = default;

TimestampMs Store::Now() const {
  return options_.clock->WallMs();
}

absl::Status Store::ReadTx(absl::FunctionRef<absl::Status(Connection&)> fn) const {
  STORE_ASSIGN_OR_RETURN(ConnectionPool::Lease lease, readers_->Acquire());
  // One read transaction: multi-statement reads see one consistent snapshot.
  STORE_RETURN_IF_ERROR(lease->Exec("BEGIN"));
  absl::Status status = fn(*lease);
  absl::Status end = lease->Exec("COMMIT");
  if (!end.ok()) lease->Exec("ROLLBACK").IgnoreError();
  return status.ok() ? end : status;
}

absl::Status Store::WriteTx(absl::FunctionRef<absl::Status(Connection&)> fn, Fences fences) {
  absl::Status s = writer_->Write([&fn, fences, this](Connection& c) {
    // Before the job touches anything: a check cached earlier may be about to change.
    if (fences == Fences::kForget) fences_->Clear();
    return fn(c);
  });
  if (s.code() != absl::StatusCode::kResourceExhausted ||
      !absl::StrContains(s.message(), "disk is full")) {
    return s;
  }
  return DiskFull(s);
}

absl::Status Store::DiskFull(const absl::Status& s) {
  std::string dir = path_.substr(0, path_.find_last_of('/') == std::string::npos
                                        ? 0
                                        : path_.find_last_of('/'));
  absl::Status full = absl::ResourceExhaustedError(absl::StrCat(
      "no space left in data dir ", dir.empty() ? "." : dir, " (", s.message(),
      "): nothing of this write was stored; reads go on, and writes resume once space is freed"));
  // The log may be what fills the disk: have it copied back so that it can start over.
  if (checkpointer_) checkpointer_->Request();
  // The operator must hear of it even when no client is watching; once a minute is enough.
  const TimestampMs now = Now();
  TimestampMs last = last_disk_full_log_ms_.load();
  if (now - last >= 60000 && last_disk_full_log_ms_.compare_exchange_strong(last, now)) {
    std::cerr << "ablate-coordinator: " << full.message() << std::endl;
  }
  return full;
}

absl::StatusOr<int64_t> Store::CreateSweep(Sweep sweep, std::vector<Variant> variants,
                                           std::vector<Run> runs) {
  if (variants.empty() || runs.empty()) {
    return absl::InvalidArgumentError("a sweep needs at least one variant and one run");
  }
  TimestampMs now = Now();
  return Write<int64_t>(
      [&](Connection& c) { return CreateSweepTx(c, sweep, variants, runs, now); });
}

absl::StatusOr<Sweep> Store::GetSweep(int64_t sweep_id) const {
  return Read<Sweep>([&](Connection& c) { return LoadSweep(c, sweep_id); });
}

absl::StatusOr<std::vector<Sweep>> Store::ListSweeps(const SweepFilter& filter) const {
  std::vector<std::string> where;
  if (filter.state.has_value()) where.push_back("state = ?");
  if (filter.tag.has_value())
    where.push_back("id IN (SELECT sweep_id FROM sweep_tags WHERE tag = ?)");
  std::string sql = absl::StrCat("SELECT id FROM sweeps", WhereClause(where),
                                 " ORDER BY id DESC LIMIT ? OFFSET ?");
  return Read<std::vector<Sweep>>([&](Connection& c) -> absl::StatusOr<std::vector<Sweep>> {
    STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(sql));
    int index = 1;
    if (filter.state.has_value()) stmt.Bind(index++, SweepStateName(*filter.state));
    if (filter.tag.has_value()) stmt.Bind(index++, *filter.tag);
    stmt.Bind(index++, SqlLimit(filter.limit));
    stmt.Bind(index++, filter.offset);
    std::vector<Sweep> sweeps;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return sweeps;
      STORE_ASSIGN_OR_RETURN(Sweep sweep, LoadSweep(c, stmt.Int(0)));
      sweeps.push_back(std::move(sweep));
    }
  });
}

absl::StatusOr<std::vector<Variant>> Store::ListVariants(int64_t sweep_id) const {
  return Read<std::vector<Variant>>([&](Connection& c) -> absl::StatusOr<std::vector<Variant>> {
    STORE_RETURN_IF_ERROR(CheckSweepExists(c, sweep_id));
    STORE_ASSIGN_OR_RETURN(
        Statement stmt, c.Prepare(absl::StrCat("SELECT ", kVariantColumns,
                                               " FROM variants WHERE sweep_id = ? ORDER BY idx")));
    stmt.BindAll(sweep_id);
    std::vector<Variant> variants;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return variants;
      variants.push_back(ReadVariant(stmt));
    }
  });
}

absl::StatusOr<Run> Store::GetRun(int64_t run_id) const {
  return Read<Run>([&](Connection& c) { return store_internal::LoadRun(c, run_id); });
}

absl::StatusOr<std::vector<Run>> Store::ListRuns(const RunFilter& filter) const {
  std::vector<std::string> where;
  if (filter.sweep_id.has_value()) where.push_back("r.sweep_id = ?");
  if (filter.state.has_value()) where.push_back("r.state = ?");
  std::string sql = absl::StrCat("SELECT ", kRunColumns, " FROM ", kRunFrom, WhereClause(where),
                                 " ORDER BY r.id LIMIT ? OFFSET ?");
  return Read<std::vector<Run>>([&](Connection& c) -> absl::StatusOr<std::vector<Run>> {
    STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(sql));
    int index = 1;
    if (filter.sweep_id.has_value()) stmt.Bind(index++, *filter.sweep_id);
    if (filter.state.has_value()) stmt.Bind(index++, RunStateName(*filter.state));
    stmt.Bind(index++, SqlLimit(filter.limit));
    stmt.Bind(index++, filter.offset);
    std::vector<Run> runs;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return runs;
      runs.push_back(ReadRun(stmt));
    }
  });
}

absl::StatusOr<std::map<RunState, int>> Store::CountRunsByState(int64_t sweep_id) const {
  using Counts = std::map<RunState, int>;
  return Read<Counts>([&](Connection& c) -> absl::StatusOr<Counts> {
    STORE_RETURN_IF_ERROR(CheckSweepExists(c, sweep_id));
    STORE_ASSIGN_OR_RETURN(Counts present, RunCounts(c, sweep_id));
    Counts counts;
    for (RunState s : {RunState::kQueued, RunState::kAssigned, RunState::kRunning,
                       RunState::kSucceeded, RunState::kFailed, RunState::kCancelled}) {
      counts[s] = present.contains(s) ? present[s] : 0;
    }
    return counts;
  });
}

namespace {

absl::StatusOr<std::vector<int64_t>> ActiveRunIds(Connection& c, int64_t sweep_id) {
  STORE_ASSIGN_OR_RETURN(
      Statement stmt,
      c.Prepare("SELECT id FROM runs WHERE sweep_id = ? AND state IN ('assigned', 'running') "
                "ORDER BY id"));
  stmt.BindAll(sweep_id);
  std::vector<int64_t> ids;
  while (true) {
    STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return ids;
    ids.push_back(stmt.Int(0));
  }
}

absl::StatusOr<std::vector<int64_t>> CancelSweepTx(Connection& c, int64_t sweep_id,
                                                   TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(Sweep sweep, LoadSweep(c, sweep_id));
  if (sweep.state != SweepState::kQueued && sweep.state != SweepState::kRunning) {
    return absl::FailedPreconditionError(absl::StrCat("sweep ", sweep_id, " is already ",
                                                      ToAbsl(SweepStateName(sweep.state)),
                                                      "; nothing to cancel"));
  }
  STORE_ASSIGN_OR_RETURN(std::vector<int64_t> active, ActiveRunIds(c, sweep_id));
  STORE_ASSIGN_OR_RETURN(
      Statement runs,
      c.Prepare("UPDATE runs SET state = 'cancelled', finished_ms = ? "
                "WHERE sweep_id = ? AND state IN ('queued', 'assigned', 'running')"));
  runs.BindAll(now, sweep_id);
  STORE_RETURN_IF_ERROR(runs.Run());
  const int cancelled = c.Changes();
  STORE_ASSIGN_OR_RETURN(
      Statement update,
      c.Prepare("UPDATE sweeps SET state = 'cancelled', finished_ms = ? WHERE id = ?"));
  update.BindAll(now, sweep_id);
  STORE_RETURN_IF_ERROR(update.Run());
  STORE_RETURN_IF_ERROR(StateEvent(
      c, sweep_id, 0, now,
      absl::StrCat("sweep ", ToAbsl(SweepStateName(sweep.state)), " -> cancelled: ", cancelled,
                   " runs cancelled, ", active.size(), " of them active")));
  return active;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> Store::CancelSweep(int64_t sweep_id) {
  TimestampMs now = Now();
  return Write<std::vector<int64_t>>(
      [&](Connection& c) { return CancelSweepTx(c, sweep_id, now); });
}

}  // namespace ablate
