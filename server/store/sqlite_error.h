// The one place where SQLite result codes become absl::Status (STYLE: each foreign error source
// is translated once).
#ifndef ABLATE_SERVER_STORE_SQLITE_ERROR_H_
#define ABLATE_SERVER_STORE_SQLITE_ERROR_H_

#include <string_view>

#include "absl/status/status.h"

struct sqlite3;

namespace ablate {

// Maps an SQLite (extended) result code to a Status whose message is
// "<context>: <sqlite message> (<code name>)". `db`, when given, supplies the detailed message
// of the connection's last error. SQLITE_OK, SQLITE_ROW and SQLITE_DONE map to OK.
//
// Codes: UNIQUE/PRIMARY KEY constraint -> ALREADY_EXISTS; FOREIGN KEY -> FAILED_PRECONDITION;
// CHECK/NOT NULL and other constraints -> INVALID_ARGUMENT; BUSY/LOCKED -> UNAVAILABLE;
// CANTOPEN/PERM/READONLY/AUTH -> FAILED_PRECONDITION; FULL/NOMEM -> RESOURCE_EXHAUSTED;
// CORRUPT/NOTADB -> DATA_LOSS; IOERR -> UNAVAILABLE; INTERRUPT -> CANCELLED; else INTERNAL.
absl::Status SqliteError(int rc, std::string_view context, sqlite3* db = nullptr);

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_SQLITE_ERROR_H_
