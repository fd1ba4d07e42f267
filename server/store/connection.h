// One SQLite connection, configured the way the store needs it (WAL, busy timeout, foreign keys),
// with a cache of prepared statements.
#ifndef ABLATE_SERVER_STORE_CONNECTION_H_
#define ABLATE_SERVER_STORE_CONNECTION_H_

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/store/statement.h"

namespace ablate {

struct ConnectionOptions {
  // `filename` is an SQLite URI ("file:...?vfs=memdb"), not a plain path.
  bool uri = false;
  // Readers set PRAGMA query_only, so a write through them is an error rather than a surprise.
  bool read_only = false;
  // Switch the database to WAL (ignored by in-memory databases, which have no WAL).
  bool wal = true;
  int busy_timeout_ms = 5000;
};

// Owns an sqlite3 handle. Not thread-safe: one thread uses a connection at a time (the writer
// thread, or a reader that leased it from a ConnectionPool).
class Connection {
 public:
  // Opens (creating if missing) and configures the database. FAILED_PRECONDITION when the file
  // cannot be opened; other codes as SqliteError.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& filename,
                                                          const ConnectionOptions& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more ';'-separated statements that return no rows of interest; parses the text
  // each time.
  absl::Status Exec(std::string_view sql);
  // Runs one statement that returns no rows of interest through the statement cache, so that a
  // statement run over and over (SAVEPOINT, COMMIT) is parsed once per connection.
  absl::Status ExecCached(std::string_view sql);
  // A statement for `sql`, from the cache unless the cached one is still in use.
  absl::StatusOr<Statement> Prepare(std::string_view sql);

  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  // Rows changed by the last INSERT/UPDATE/DELETE.
  int Changes() const { return sqlite3_changes(db_); }
  // False in autocommit mode, i.e. outside BEGIN ... COMMIT.
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  const std::string& filename() const { return filename_; }
  // The raw handle, for SQLite APIs this class does not wrap (the online backup).
  sqlite3* handle() const { return db_; }

 private:
  // Lets the cache be searched by string_view without building a std::string.
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>{}(sql); }
  };
  struct CachedStatement {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  Connection(sqlite3* db, std::string filename) : db_(db), filename_(std::move(filename)) {}
  absl::Status Configure(const ConnectionOptions& options);

  sqlite3* db_;
  std::string filename_;
  // Node-based: stable addresses for Statement's in_use pointer.
  std::unordered_map<std::string, CachedStatement, SqlHash, std::equal_to<>> cache_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_CONNECTION_H_
