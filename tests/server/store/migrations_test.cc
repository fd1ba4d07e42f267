// Schema migrations: a fresh database, an upgrade from version 1 that keeps data, and refusal
// of a database from a newer coordinator.
#include "server/store/migrations.h"

#include <set>

#include "gtest/gtest.h"
#include "server/store/connection.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::OpenOrDie;
using testing::TempDir;

std::set<std::string> Tables(const std::string& path) {
  auto c = Connection::Open(path, ConnectionOptions{});
  auto stmt = (*c)->Prepare("SELECT name FROM sqlite_schema WHERE type = 'table'");
  std::set<std::string> names;
  while (stmt->Step().value_or(false)) names.insert(stmt->Text(0));
  return names;
}

int LatestVersion() { return EmbeddedMigrations().back().version; }

// A sweep with one variant and 4 runs, written with version 1's columns only.
int64_t InsertVersionOneSweep(const std::string& path, const std::string& name,
                              const std::string& tag) {
  auto c = Connection::Open(path, ConnectionOptions{});
  const std::string sql =
      "INSERT INTO sweeps (id, name, state, spec_yaml, target_val_loss, seeds, gpus_per_run, "
      "max_attempts, created_ms) VALUES (1, '" + name + "', 'queued', 'name: x', 3.28, 4, 0, 3, 1);"
      "INSERT INTO sweep_tags (sweep_id, tag) VALUES (1, '" + tag + "');"
      "INSERT INTO variants (id, sweep_id, idx, name, config_json, config_hash, diff_json) "
      "VALUES (1, 1, 0, 'baseline', '{}', 'h', '{}');"
      "INSERT INTO runs (sweep_id, variant_id, seed, state, created_ms) VALUES "
      "(1, 1, 0, 'queued', 1), (1, 1, 1, 'queued', 1), (1, 1, 2, 'queued', 1), "
      "(1, 1, 3, 'queued', 1);";
  EXPECT_TRUE((*c)->Exec(sql).ok());
  return 1;
}

TEST(MigrationsTest, EmbeddedTableIsSortedAndNamed) {
  auto migrations = EmbeddedMigrations();
  ASSERT_GE(migrations.size(), 2u);
  EXPECT_EQ(migrations[0].version, 1);
  EXPECT_EQ(migrations[0].name, "init");
  for (size_t i = 1; i < migrations.size(); ++i) {
    EXPECT_LT(migrations[i - 1].version, migrations[i].version);
    EXPECT_FALSE(migrations[i].sql.empty());
  }
}

TEST(MigrationsTest, FreshDatabaseHasEveryTableAndTheLatestVersion) {
  TempDir dir;
  const std::string path = dir.path() + "/fresh.db";
  {
    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->SchemaVersion(), LatestVersion());
  }
  std::set<std::string> tables = Tables(path);
  for (const char* t : {"sweeps", "sweep_tags", "variants", "runs", "attempts", "metrics",
                        "metric_batches", "workers", "events", "records", "schema_migrations"}) {
    EXPECT_TRUE(tables.contains(t)) << t;
  }
  auto c = Connection::Open(path, ConnectionOptions{});
  auto rows = (*c)->Prepare("SELECT version, name, applied_ms FROM schema_migrations ORDER BY 1");
  // Every embedded migration, in order (numbers are assigned per feature, so a branch may lack
  // one between two others until it is merged).
  auto embedded = EmbeddedMigrations();
  size_t applied = 0;
  while (rows->Step().value_or(false)) {
    ASSERT_LT(applied, embedded.size());
    EXPECT_EQ(rows->Int(0), embedded[applied++].version);
    EXPECT_FALSE(rows->Text(1).empty());
    EXPECT_GT(rows->Int(2), 0);
  }
  EXPECT_EQ(applied, embedded.size());
  auto mode = (*c)->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode->Step().value_or(false));
  EXPECT_EQ(mode->Text(0), "wal");
}

TEST(MigrationsTest, UpgradeFromVersionOneKeepsData) {
  TempDir dir;
  const std::string path = dir.path() + "/old.db";
  int64_t sweep_id = 0;
  {
    StoreOptions v1;
    v1.max_migrations = 1;
    auto store = OpenOrDie(path, v1);
    ASSERT_NE(store, nullptr);
    ASSERT_EQ(store->SchemaVersion(), 1);
  }
  // Rows as a version-1 coordinator wrote them (today's store writes columns added since).
  sweep_id = InsertVersionOneSweep(path, "before-upgrade", "old");
  EXPECT_FALSE(Tables(path).empty());
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), LatestVersion());
  absl::StatusOr<Sweep> sweep = store->GetSweep(sweep_id);
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  EXPECT_EQ(sweep->name, "before-upgrade");
  EXPECT_EQ(sweep->tags, std::vector<std::string>{"old"});
  RunFilter runs;
  runs.sweep_id = sweep_id;
  EXPECT_EQ(store->ListRuns(runs).value().size(), 4u);
  // Columns added later read as their defaults: fixed seeds, submission order.
  EXPECT_EQ(sweep->seeds_min, 0);
  EXPECT_EQ(sweep->order_seed, 0);
  EXPECT_EQ(store->ListRuns(runs).value()[0].dispatch_order, 0);
  // The version-2 indexes exist now.
  auto c = Connection::Open(path, ConnectionOptions{});
  auto index = (*c)->Prepare(
      "SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = 'runs_by_sweep_state'");
  EXPECT_TRUE(index->Step().value_or(false));
}

TEST(MigrationsTest, RefusesDatabaseFromNewerCoordinator) {
  TempDir dir;
  const std::string path = dir.path() + "/x.db";
  ASSERT_NE(OpenOrDie(path), nullptr);
  {
    auto c = Connection::Open(path, ConnectionOptions{});
    ASSERT_TRUE((*c)->Exec("INSERT INTO schema_migrations VALUES (9999, 'future', 1)").ok());
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path, StoreOptions{});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            "database " + path + " has schema version 9999 but this coordinator knows only up to " +
                std::to_string(LatestVersion()) + "; upgrade ablate or use another --data-dir");
}

TEST(MigrationsTest, OlderCoordinatorRefusesUpgradedDatabase) {
  TempDir dir;
  const std::string path = dir.path() + "/y.db";
  ASSERT_NE(OpenOrDie(path), nullptr);
  StoreOptions v1;
  v1.max_migrations = 1;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path, v1);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("knows only up to 1"), std::string::npos);
}

TEST(MigrationsTest, FailingMigrationLeavesPreviousVersion) {
  TempDir dir;
  auto c = Connection::Open(dir.path() + "/z.db", ConnectionOptions{});
  ASSERT_TRUE(c.ok());
  const Migration bad[] = {{1, "ok", "CREATE TABLE a (x INTEGER)"},
                           {2, "broken", "CREATE TABLE b (x INTEGER); SELECT * FROM missing"}};
  absl::StatusOr<int> version = ApplyMigrations(**c, bad, "z.db", 1);
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.status().message().find("0002_broken"), std::string::npos);
  EXPECT_EQ(ReadSchemaVersion(**c).value(), 1);
  auto b = (**c).Prepare("SELECT 1 FROM sqlite_schema WHERE name = 'b'");
  EXPECT_FALSE(b->Step().value_or(true)) << "the failed migration's DDL is rolled back";
}

// Migration numbers are handed to branches in parallel: a database that has 0001 and 0003 still
// gets an 0002 merged after 0003 was applied.
TEST(MigrationsTest, AMigrationMergedBelowTheNewestAppliedIsApplied) {
  TempDir dir;
  auto c = Connection::Open(dir.path() + "/m.db", ConnectionOptions{});
  ASSERT_TRUE(c.ok());
  const Migration before[] = {{1, "a", "CREATE TABLE a (x INTEGER)"},
                              {3, "c", "CREATE TABLE c (x INTEGER)"}};
  ASSERT_EQ(ApplyMigrations(**c, before, "m.db", 1).value(), 3);
  const Migration after[] = {{1, "a", "CREATE TABLE a (x INTEGER)"},
                             {2, "b", "CREATE TABLE b (x INTEGER)"},
                             {3, "c", "CREATE TABLE c (x INTEGER)"}};
  ASSERT_EQ(ApplyMigrations(**c, after, "m.db", 2).value(), 3) << "1 and 3 are not run again";
  auto b = (**c).Prepare("SELECT 1 FROM sqlite_schema WHERE name = 'b'");
  EXPECT_TRUE(b->Step().value_or(false));
  auto rows = (**c).Prepare("SELECT count(*) FROM schema_migrations");
  ASSERT_TRUE(rows->Step().value_or(false));
  EXPECT_EQ(rows->Int(0), 3);
}

TEST(MigrationsTest, MemoryDatabaseMigrates) {
  auto store = OpenOrDie(":memory:");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), LatestVersion());
}

}  // namespace
}  // namespace ablate
