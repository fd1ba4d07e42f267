// Statement: the thin layer over sqlite3_stmt that turns result codes into Status.
#include "server/store/statement.h"

#include <utility>

#include "server/store/sqlite_error.h"

namespace ablate {

Statement::Statement(sqlite3_stmt* stmt, bool* in_use) : stmt_(stmt), in_use_(in_use) {}

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)),
      in_use_(std::exchange(other.in_use_, nullptr)),
      bind_status_(std::move(other.bind_status_)) {}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  if (in_use_ == nullptr) {
    sqlite3_finalize(stmt_);
    return;
  }
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  *in_use_ = false;
}

void Statement::Bind(int index, std::string_view text) {
  Check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                          SQLITE_TRANSIENT));
}

void Statement::Check(int rc) {
  if (rc != SQLITE_OK && bind_status_.ok()) {
    bind_status_ =
        SqliteError(rc, std::string("bind ") + sqlite3_sql(stmt_), sqlite3_db_handle(stmt_));
  }
}

absl::StatusOr<bool> Statement::Step() {
  if (!bind_status_.ok()) return bind_status_;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(rc, sqlite3_sql(stmt_), sqlite3_db_handle(stmt_));
}

absl::Status Statement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_status_ = absl::OkStatus();
}

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<double> Statement::OptDouble(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Double(column);
}

std::optional<int64_t> Statement::OptInt(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Int(column);
}

}  // namespace ablate
