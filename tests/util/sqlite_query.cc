#include "tests/util/sqlite_query.h"

#include <sqlite3.h>

namespace ablate::testing {

int64_t QueryInt(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t n = -1;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return n;
}

}  // namespace ablate::testing
