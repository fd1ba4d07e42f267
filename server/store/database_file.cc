// CheckDatabaseFile and BackupDatabase.
#include "server/store/database_file.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/store/connection.h"
#include "server/store/sqlite_error.h"
#include "server/store/status_macros.h"

namespace ablate {
namespace {

// Runs an integrity pragma and returns its first complaint, or "" for "ok".
absl::StatusOr<std::string> FirstComplaint(Connection& c, const char* pragma) {
  STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(pragma));
  STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::string("no result");
  std::string first = stmt.Text(0);
  return first == "ok" ? "" : first;
}

// Read-only use of an existing file: query_only, and no switch to WAL (that would write).
ConnectionOptions ReadOnly() {
  ConnectionOptions o;
  o.wal = false;
  o.read_only = true;
  return o;
}

absl::Status SyncFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot open ", path, " to sync it"));
  int rc = fsync(fd);
  close(fd);
  if (rc != 0) return absl::UnavailableError(absl::StrCat("cannot sync ", path));
  return absl::OkStatus();
}

// Copies every page of `from` into `to` in one backup step (one read transaction on `from`).
absl::StatusOr<BackupStats> CopyPages(Connection& from, Connection& to) {
  sqlite3_backup* backup = sqlite3_backup_init(to.handle(), "main", from.handle(), "main");
  if (backup == nullptr) {
    return SqliteError(sqlite3_extended_errcode(to.handle()), "start backup", to.handle());
  }
  int rc = sqlite3_backup_step(backup, -1);
  BackupStats stats;
  stats.pages = sqlite3_backup_pagecount(backup);
  int finish = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) return SqliteError(rc, "copy pages", nullptr);
  if (finish != SQLITE_OK) return SqliteError(finish, "finish backup", to.handle());
  return stats;
}

}  // namespace

absl::Status CheckDatabaseFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0) {
    return absl::OkStatus();
  }
  auto damaged = [&path](const std::string& why) {
    return absl::DataLossError(absl::StrCat(
        "database ", path, " is damaged (", why,
        "); it was not changed. Restore it from a backup (README: Backups) or move it aside"));
  };
  absl::StatusOr<std::unique_ptr<Connection>> c = Connection::Open(path, ReadOnly());
  if (!c.ok()) return damaged(std::string(c.status().message()));
  absl::StatusOr<std::string> complaint = FirstComplaint(**c, "PRAGMA quick_check");
  if (!complaint.ok()) return damaged(std::string(complaint.status().message()));
  if (!complaint->empty()) return damaged("quick_check: " + *complaint);
  return absl::OkStatus();
}

absl::StatusOr<BackupStats> BackupDatabase(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(from, ec)) return absl::NotFoundError(absl::StrCat("no database at ", from));
  if (fs::exists(to, ec) && fs::equivalent(from, to, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(to, " is the database itself"));
  }
  const std::string tmp = to + ".tmp";
  fs::remove(tmp, ec);
  STORE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> source, Connection::Open(from, ReadOnly()));
  ConnectionOptions dest_options;
  dest_options.wal = false;
  STORE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> dest, Connection::Open(tmp, dest_options));
  absl::StatusOr<BackupStats> stats = CopyPages(*source, *dest);
  // The copied header says WAL; a backup is one file, so back to a rollback journal.
  absl::Status s = stats.ok() ? dest->Exec("PRAGMA journal_mode = DELETE") : stats.status();
  absl::StatusOr<std::string> complaint =
      s.ok() ? FirstComplaint(*dest, "PRAGMA integrity_check") : s;
  dest.reset();
  if (complaint.ok() && !complaint->empty()) {
    complaint = absl::DataLossError(absl::StrCat("the copy fails integrity_check: ", *complaint));
  }
  if (complaint.ok()) {
    if (absl::Status synced = SyncFile(tmp); !synced.ok()) complaint = synced;
  }
  if (!complaint.ok()) {
    fs::remove(tmp, ec);
    return complaint.status();
  }
  fs::rename(tmp, to, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", to, ": ",
                                                     ec.message()));
  stats->bytes = static_cast<int64_t>(fs::file_size(to, ec));
  return stats;
}

}  // namespace ablate
