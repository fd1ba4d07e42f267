// Raw batched SQLite inserts of metric rows (the ingest benchmark's baseline).
#include "bench/coordinator/raw_sqlite_baseline.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <vector>

#include "tests/util/subprocess.h"

namespace ablate::bench {
namespace {

bool Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) == SQLITE_OK) return true;
  std::cerr << "raw SQLite: " << (error ? error : "?") << " in: " << sql.substr(0, 80) << "\n";
  sqlite3_free(error);
  return false;
}

bool ApplyMigrations(sqlite3* db, const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".sql") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (!Exec(db, testing::ReadFile(f.string()))) return false;
  }
  return !files.empty();
}

// A sweep, its variant, and one run with attempt id = run id for each run (foreign keys hold).
bool InsertParents(sqlite3* db, int runs) {
  std::string sql =
      "BEGIN; INSERT INTO sweeps (id, name, state, spec_yaml, target_val_loss, seeds, "
      "gpus_per_run, max_attempts, created_ms) VALUES (1, 'raw', 'running', '', 3.28, 1, 0, 1, 0);"
      "INSERT INTO variants (id, sweep_id, idx, name, config_json, config_hash) "
      "VALUES (1, 1, 0, 'baseline', '{}', '');";
  for (int r = 1; r <= runs; ++r) {
    std::string id = std::to_string(r);
    sql += "INSERT INTO runs (id, sweep_id, variant_id, seed, state, current_attempt_id, "
           "created_ms) VALUES (" + id + ", 1, 1, " + id + ", 'running', " + id + ", 0);"
           "INSERT INTO attempts (id, run_id, number, fencing_token, worker_id, state, "
           "started_ms) VALUES (" + id + ", " + id + ", 1, 1, 'raw', 'running', 0);";
  }
  return Exec(db, sql + "COMMIT;");
}

// The same statement the store's AppendMetrics runs per point.
constexpr char kInsert[] =
    "INSERT OR REPLACE INTO metrics (attempt_id, step, run_id, train_loss, val_loss, lr, step_ms, "
    "train_time_ms, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";

bool InsertBatch(sqlite3* db, sqlite3_stmt* stmt, int run, int64_t first_step, int points) {
  if (!Exec(db, "BEGIN IMMEDIATE")) return false;
  for (int i = 0; i < points; ++i) {
    int64_t step = first_step + i;
    sqlite3_reset(stmt);
    sqlite3_bind_int64(stmt, 1, run);
    sqlite3_bind_int64(stmt, 2, step);
    sqlite3_bind_int64(stmt, 3, run);
    sqlite3_bind_double(stmt, 4, 10.0 / (1.0 + 0.001 * static_cast<double>(step)));
    sqlite3_bind_null(stmt, 5);
    sqlite3_bind_double(stmt, 6, 0.02);
    sqlite3_bind_double(stmt, 7, 1.25);
    sqlite3_bind_double(stmt, 8, 1.25 * static_cast<double>(step));
    sqlite3_bind_int64(stmt, 9, 8192 * step);
    if (sqlite3_step(stmt) != SQLITE_DONE) {
      std::cerr << "raw SQLite insert: " << sqlite3_errmsg(db) << "\n";
      return false;
    }
  }
  return Exec(db, "COMMIT");
}

bool InsertAll(sqlite3* db, const RawInsertShape& shape) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, kInsert, -1, &stmt, nullptr) != SQLITE_OK) return false;
  bool ok = true;
  for (int b = 0; b < shape.batches_per_run && ok; ++b) {
    for (int r = 1; r <= shape.runs && ok; ++r) {  // interleaved like concurrent runs
      ok = InsertBatch(db, stmt, r, static_cast<int64_t>(b) * shape.points_per_batch,
                       shape.points_per_batch);
    }
  }
  sqlite3_finalize(stmt);
  return ok;
}

}  // namespace

RawInsertResult MeasureRawInserts(const std::string& migrations_dir, const RawInsertShape& shape) {
  testing::TempDir dir;
  sqlite3* db = nullptr;
  RawInsertResult result;
  if (sqlite3_open((dir.path() + "/raw.db").c_str(), &db) == SQLITE_OK &&
      Exec(db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; "
               "PRAGMA journal_mode = WAL;") &&
      ApplyMigrations(db, migrations_dir) && InsertParents(db, shape.runs)) {
    auto t0 = std::chrono::steady_clock::now();
    result.ok = InsertAll(db, shape);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  sqlite3_close(db);
  return result;
}

}  // namespace ablate::bench
