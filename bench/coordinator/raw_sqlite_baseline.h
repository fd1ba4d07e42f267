// The ingest benchmark's baseline: the same metric rows inserted straight into a fresh SQLite
// file with the coordinator's schema (the migrations loaded at runtime) and pragmas
// (server/store/connection.cc: foreign_keys ON, synchronous NORMAL, WAL), one transaction per
// batch, one prepared statement, on the calling thread.
#ifndef ABLATE_BENCH_COORDINATOR_RAW_SQLITE_BASELINE_H_
#define ABLATE_BENCH_COORDINATOR_RAW_SQLITE_BASELINE_H_

#include <string>

namespace ablate::bench {

struct RawInsertShape {
  int runs = 0;  // each with its own attempt, as the coordinator stores them
  int batches_per_run = 0;
  int points_per_batch = 0;  // rows per transaction
};

struct RawInsertResult {
  bool ok = false;  // false after printing what failed
  double seconds = 0;  // the inserts only (schema and parent rows excluded)
};

RawInsertResult MeasureRawInserts(const std::string& migrations_dir, const RawInsertShape& shape);

}  // namespace ablate::bench

#endif  // ABLATE_BENCH_COORDINATOR_RAW_SQLITE_BASELINE_H_
