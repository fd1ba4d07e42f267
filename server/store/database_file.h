// Whole-file operations on the coordinator's database: the integrity check that keeps a
// coordinator off a damaged file, and the online backup (`ablate-coordinator backup`).
#ifndef ABLATE_SERVER_STORE_DATABASE_FILE_H_
#define ABLATE_SERVER_STORE_DATABASE_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ablate {

// OK when `path` does not exist or is empty (a new store), or when SQLite's quick_check passes.
// DATA_LOSS naming the file and SQLite's first complaint when it is not a database or is damaged.
// Reads only: the file is never written, whatever it holds.
absl::Status CheckDatabaseFile(const std::string& path);

struct BackupStats {
  int64_t pages = 0;
  int64_t bytes = 0;
};

// Copies the database at `from` to `to` with SQLite's online backup API, in one read transaction:
// a consistent snapshot of every committed write, taken while a coordinator keeps writing (WAL
// readers do not block its writer). The copy is written to `to`.tmp, switched to a rollback
// journal (one self-contained file), checked with PRAGMA integrity_check, synced, and only then
// renamed over `to`. NOT_FOUND when `from` does not exist; INVALID_ARGUMENT when `to` is `from`;
// DATA_LOSS when the copy fails its check; other codes as SqliteError.
absl::StatusOr<BackupStats> BackupDatabase(const std::string& from, const std::string& to);

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_DATABASE_FILE_H_
