// Connection: opening, configuring and statement caching.
#include "server/store/connection.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/store/absl_compat.h"
#include "server/store/sqlite_error.h"

namespace ablate {

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& filename,
                                                             const ConnectionOptions& options) {
  sqlite3* db = nullptr;
  // NOMUTEX: a connection is never shared between threads at the same time.
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  if (options.uri) flags |= SQLITE_OPEN_URI;
  int rc = sqlite3_open_v2(filename.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(rc, absl::StrCat("open database ", filename), db);
    sqlite3_close(db);  // sqlite3_open_v2 allocates a handle even when it fails
    return status;
  }
  std::unique_ptr<Connection> connection(new Connection(db, filename));
  absl::Status status = connection->Configure(options);
  if (!status.ok()) return status;
  return connection;
}

absl::Status Connection::Configure(const ConnectionOptions& options) {
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, options.busy_timeout_ms);
  std::string pragmas = "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;";
  if (options.wal) pragmas += " PRAGMA journal_mode = WAL;";
  if (options.read_only) pragmas += " PRAGMA query_only = ON;";
  return Exec(pragmas);
}

Connection::~Connection() {
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached.stmt);
  sqlite3_close(db_);
}

absl::Status Connection::Exec(std::string_view sql) {
  std::string text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  sqlite3_free(message);  // the same text is available from sqlite3_errmsg
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string context = text.size() > 80 ? text.substr(0, 80) + "..." : text;
  return SqliteError(rc, context, db_);
}

absl::Status Connection::ExecCached(std::string_view sql) {
  absl::StatusOr<Statement> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  return stmt->Run();
}

absl::StatusOr<Statement> Connection::Prepare(std::string_view sql) {
  // Look up first: the hot path (a statement seen before) allocates nothing.
  auto it = cache_.find(sql);
  bool inserted = false;
  if (it == cache_.end()) {
    it = cache_.try_emplace(std::string(sql)).first;
    inserted = true;
  }
  CachedStatement& cached = it->second;
  bool use_cache = !cached.in_use;
  sqlite3_stmt* stmt = use_cache ? cached.stmt : nullptr;
  if (stmt == nullptr) {
    unsigned flags = use_cache ? SQLITE_PREPARE_PERSISTENT : 0;
    int rc =
        sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), flags, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      if (inserted) cache_.erase(it);
      return SqliteError(rc, absl::StrCat("prepare ", ToAbsl(sql)), db_);
    }
    if (use_cache) cached.stmt = stmt;
  }
  if (!use_cache) return Statement(stmt, nullptr);
  cached.in_use = true;
  return Statement(stmt, &cached.in_use);
}

}  // namespace ablate
