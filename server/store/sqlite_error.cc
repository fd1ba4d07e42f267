// Translation of SQLite result codes into absl::Status.
#include "server/store/sqlite_error.h"

#include <sqlite3.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "server/store/absl_compat.h"

namespace ablate {
namespace {

absl::StatusCode ConstraintCode(int extended_rc) {
  switch (extended_rc) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
      return absl::StatusCode::kAlreadyExists;
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInvalidArgument;
  }
}

absl::StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
      return ConstraintCode(rc);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
      return absl::StatusCode::kUnavailable;
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_INTERRUPT:
      return absl::StatusCode::kCancelled;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status SqliteError(int rc, std::string_view context, sqlite3* db) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return absl::OkStatus();
  // The connection's message is more specific ("FOREIGN KEY constraint failed") than the
  // generic text of the code, but only when it describes this very error.
  std::string detail = sqlite3_errstr(rc);
  if (db != nullptr && sqlite3_extended_errcode(db) == rc) detail = sqlite3_errmsg(db);
  return absl::Status(CodeFor(rc), absl::StrCat(ToAbsl(context), ": ", detail, " (",
                                                sqlite3_errstr(rc), ", code ", rc, ")"));
}

}  // namespace ablate
