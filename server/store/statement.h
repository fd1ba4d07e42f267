// A prepared SQLite statement: binding, stepping and reading columns with Status errors.
#ifndef ABLATE_SERVER_STORE_STATEMENT_H_
#define ABLATE_SERVER_STORE_STATEMENT_H_

#include <sqlite3.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ablate {

// Wraps one sqlite3_stmt borrowed from a Connection's cache (or owned, when the cached one is in
// use). Parameters and columns are 1-based and 0-based respectively, as in SQLite. Not
// thread-safe: used by the thread that holds its Connection. Bind errors are kept and reported
// by the next Step()/Run(). On destruction the statement is reset and returned to the cache.
class Statement {
 public:
  Statement(sqlite3_stmt* stmt, bool* in_use);  // in_use == nullptr: owned, finalized at end
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  template <std::integral T>
  void Bind(int index, T value) {
    Check(sqlite3_bind_int64(stmt_, index, static_cast<sqlite3_int64>(value)));
  }
  template <std::floating_point T>
  void Bind(int index, T value) {
    Check(sqlite3_bind_double(stmt_, index, static_cast<double>(value)));
  }
  void Bind(int index, std::string_view text);
  void Bind(int index, const char* text) { Bind(index, std::string_view(text)); }
  void Bind(int index, std::nullopt_t) { Check(sqlite3_bind_null(stmt_, index)); }
  template <class T>
  void Bind(int index, const std::optional<T>& value) {
    if (value.has_value()) {
      Bind(index, *value);
    } else {
      Bind(index, std::nullopt);
    }
  }
  // Binds values to parameters 1, 2, ... in order.
  template <class... Ts>
  Statement& BindAll(const Ts&... values) {
    int index = 1;
    (Bind(index++, values), ...);
    return *this;
  }

  // Advances: true when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring rows (INSERT/UPDATE/DELETE).
  absl::Status Run();
  // Resets so that the statement can be stepped again with new bindings.
  void Reset();

  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  std::string Text(int column) const;
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::optional<double> OptDouble(int column) const;
  std::optional<int64_t> OptInt(int column) const;

 private:
  void Check(int rc);

  sqlite3_stmt* stmt_;
  bool* in_use_;
  absl::Status bind_status_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_STATEMENT_H_
