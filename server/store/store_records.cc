// Store: the published record history and the cross-sweep query behind "own runs of a record
// preset" (runs found by their variant's config hash).
#include <nlohmann/json.hpp>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "server/store/connection.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"
#include "server/store/store.h"

namespace ablate {
namespace {

constexpr int ColumnCount(std::string_view columns) {
  int n = 1;
  for (char ch : columns) n += ch == ',';
  return n;
}
// The columns ListSucceededRunsByConfigHash selects after kRunColumns start here.
constexpr int kPlacedExtra = ColumnCount(kRunColumns);
static_assert(kPlacedExtra == 21, "ReadRun reads 21 columns");

Record ReadRecord(const Statement& row) {
  Record r;
  r.id = row.Text(0);
  r.number = static_cast<int>(row.Int(1));
  r.date = row.Text(2);
  r.record_time_ms = row.Double(3);
  r.steps = row.OptInt(4);
  r.ms_per_step = row.OptDouble(5);
  r.description = row.Text(6);
  r.source = row.Text(7);
  r.preset = row.Text(8);
  return r;
}

PlacedRun ReadPlacedRun(const Statement& row) {
  PlacedRun p;
  p.run = ReadRun(row);
  p.config_hash = row.Text(kPlacedExtra);
  p.gpus_per_run = static_cast<int>(row.Int(kPlacedExtra + 1));
  p.gpu_model = row.Text(kPlacedExtra + 2);
  p.dataset = row.Text(kPlacedExtra + 3);
  return p;
}

}  // namespace

absl::StatusOr<std::vector<Record>> Store::ListRecords() const {
  using Records = std::vector<Record>;
  return Read<Records>([&](Connection& c) -> absl::StatusOr<Records> {
    STORE_ASSIGN_OR_RETURN(
        Statement stmt,
        c.Prepare("SELECT id, number, date, record_time_ms, steps, ms_per_step, description, "
                  "source, preset FROM records ORDER BY date, number, id"));
    Records records;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return records;
      records.push_back(ReadRecord(stmt));
    }
  });
}

absl::StatusOr<std::vector<PlacedRun>> Store::ListSucceededRunsByConfigHash(
    const std::vector<std::string>& config_hashes) const {
  // The hashes travel as one JSON array parameter, so the statement text (and cache entry) does
  // not depend on how many there are.
  const std::string hashes = nlohmann::json(config_hashes).dump();
  const std::string sql = absl::StrCat(
      "SELECT ", kRunColumns,
      ", v.config_hash, s.gpus_per_run, "
      "COALESCE(json_extract(w.gpus_json, '$[0].model'), ''), s.dataset FROM ",
      kRunFrom,
      " JOIN sweeps s ON s.id = r.sweep_id"
      " LEFT JOIN attempts a ON a.run_id = r.id AND a.state = 'succeeded'"
      " LEFT JOIN workers w ON w.id = a.worker_id"
      " WHERE r.state = 'succeeded' AND v.config_hash IN (SELECT value FROM json_each(?))"
      " ORDER BY r.id");
  using Placed = std::vector<PlacedRun>;
  return Read<Placed>([&](Connection& c) -> absl::StatusOr<Placed> {
    STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(sql));
    stmt.BindAll(hashes);
    Placed runs;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return runs;
      runs.push_back(ReadPlacedRun(stmt));
    }
  });
}

absl::StatusOr<std::map<std::string, std::vector<PlacedRun>>>
Store::ListSucceededRunsByScriptRecord() const {
  // Baselines only (idx 0 of a sweep whose baseline is included names `record`: ablations never
  // carry it, see server/sweep/script_expander.cc).
  const std::string sql = absl::StrCat(
      "SELECT ", kRunColumns,
      ", v.config_hash, s.gpus_per_run, "
      "COALESCE(json_extract(w.gpus_json, '$[0].model'), ''), "
      "json_extract(v.config_json, '$.script.record') FROM ",
      kRunFrom,
      " JOIN sweeps s ON s.id = r.sweep_id"
      " LEFT JOIN attempts a ON a.run_id = r.id AND a.state = 'succeeded'"
      " LEFT JOIN workers w ON w.id = a.worker_id"
      " WHERE r.state = 'succeeded'"
      " AND json_extract(v.config_json, '$.script.record') IS NOT NULL"
      " ORDER BY r.id");
  using ByRecord = std::map<std::string, std::vector<PlacedRun>>;
  return Read<ByRecord>([&](Connection& c) -> absl::StatusOr<ByRecord> {
    STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare(sql));
    ByRecord runs;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return runs;
      runs[stmt.Text(kPlacedExtra + 3)].push_back(ReadPlacedRun(stmt));
    }
  });
}

}  // namespace ablate
