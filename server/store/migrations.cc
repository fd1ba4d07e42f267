// Applying schema migrations at open.
#include "server/store/migrations.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/store/absl_compat.h"

namespace ablate {
namespace {

constexpr std::string_view kCreateMigrationsTable =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms INTEGER NOT NULL)";

absl::StatusOr<bool> IsApplied(Connection& connection, int version) {
  absl::StatusOr<Statement> stmt =
      connection.Prepare("SELECT 1 FROM schema_migrations WHERE version = ?");
  if (!stmt.ok()) return stmt.status();
  stmt->BindAll(version);
  return stmt->Step();
}

absl::Status ApplyOneInTransaction(Connection& connection, const Migration& migration,
                                   int64_t now_ms) {
  // Checked again inside the write lock: another process may have applied it meanwhile.
  absl::StatusOr<bool> applied = IsApplied(connection, migration.version);
  if (!applied.ok() || *applied) return applied.status();
  absl::Status status = connection.Exec(migration.sql);
  if (!status.ok()) return status;
  absl::StatusOr<Statement> insert = connection.Prepare(
      "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)");
  if (!insert.ok()) return insert.status();
  insert->BindAll(migration.version, migration.name, now_ms);
  return insert->Run();
}

absl::Status ApplyOne(Connection& connection, const Migration& migration, int64_t now_ms) {
  absl::Status status = connection.Exec("BEGIN IMMEDIATE");
  if (status.ok()) status = ApplyOneInTransaction(connection, migration, now_ms);
  if (status.ok()) status = connection.Exec("COMMIT");
  if (status.ok()) return status;
  if (connection.InTransaction()) connection.Exec("ROLLBACK").IgnoreError();
  return absl::Status(status.code(), absl::StrFormat("migration %04d_%s: %s", migration.version,
                                                     migration.name, status.message()));
}

}  // namespace

absl::StatusOr<int> ReadSchemaVersion(Connection& connection) {
  absl::StatusOr<Statement> exists = connection.Prepare(
      "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'");
  if (!exists.ok()) return exists.status();
  absl::StatusOr<bool> found = exists->Step();
  if (!found.ok()) return found.status();
  if (!*found) return 0;
  absl::StatusOr<Statement> max =
      connection.Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  if (!max.ok()) return max.status();
  absl::StatusOr<bool> row = max->Step();
  if (!row.ok()) return row.status();
  return static_cast<int>(max->Int(0));
}

absl::StatusOr<int> ApplyMigrations(Connection& connection, std::span<const Migration> migrations,
                                    std::string_view display_path, int64_t now_ms) {
  const int known = migrations.empty() ? 0 : migrations.back().version;
  absl::StatusOr<int> version = ReadSchemaVersion(connection);
  if (!version.ok()) return version.status();
  if (*version > known) {
    return absl::FailedPreconditionError(
        absl::StrCat("database ", ToAbsl(display_path), " has schema version ", *version,
                     " but this coordinator knows only up to ", known,
                     "; upgrade ablate or use another --data-dir"));
  }
  absl::Status status = connection.Exec(kCreateMigrationsTable);
  if (!status.ok()) return status;
  for (const Migration& migration : migrations) {
    // By record, not by the highest version: migration numbers are handed out to branches in
    // parallel, so a database may have 0008 and still lack an 0006 merged later.
    absl::StatusOr<bool> applied = IsApplied(connection, migration.version);
    if (!applied.ok()) return applied.status();
    if (*applied) continue;
    status = ApplyOne(connection, migration, now_ms);
    if (!status.ok()) return status;
  }
  return ReadSchemaVersion(connection);
}

}  // namespace ablate
