// Reading a running coordinator's database from a test: one integer, read-only.
#ifndef ABLATE_TESTS_UTIL_SQLITE_QUERY_H_
#define ABLATE_TESTS_UTIL_SQLITE_QUERY_H_

#include <cstdint>
#include <string>

namespace ablate::testing {

// The first column of the first row of `sql` on the SQLite file `db_path`, opened read-only with
// a busy timeout (the coordinator may be writing); -1 when it cannot be read or has no row.
int64_t QueryInt(const std::string& db_path, const std::string& sql);

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_UTIL_SQLITE_QUERY_H_
