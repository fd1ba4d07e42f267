// Store: code snapshots of script runs (migrations/0005_code_snapshots.sql), and the runs of
// script baselines that reproduce a record.
#include "absl/strings/str_cat.h"
#include "server/store/connection.h"
#include "server/store/row_codec.h"
#include "server/store/status_macros.h"
#include "server/store/store.h"
#include "server/store/store_queries.h"

namespace ablate {
namespace store_internal {

absl::Status PutSnapshotTx(Connection& c, const std::string& hash, const Snapshot& files,
                           TimestampMs now) {
  STORE_ASSIGN_OR_RETURN(
      Statement head,
      c.Prepare("INSERT INTO code_snapshots (hash, bytes, files, created_ms) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (hash) DO NOTHING"));
  head.BindAll(hash, SnapshotBytes(files), static_cast<int64_t>(files.size()), now);
  STORE_RETURN_IF_ERROR(head.Run());
  if (c.Changes() == 0) return absl::OkStatus();  // stored before: the same bytes, by hash
  STORE_ASSIGN_OR_RETURN(
      Statement file,
      c.Prepare("INSERT INTO code_snapshot_files (hash, path, executable, content) "
                "VALUES (?, ?, ?, ?)"));
  for (const SnapshotFile& f : files) {
    file.Reset();
    file.BindAll(hash, f.path, f.executable, std::string_view(f.content));
    STORE_RETURN_IF_ERROR(file.Run());
  }
  return absl::OkStatus();
}

}  // namespace store_internal

using store_internal::PutSnapshotTx;

absl::Status Store::PutSnapshot(const std::string& hash, const Snapshot& files) {
  if (hash.size() != 64) return absl::InvalidArgumentError("snapshot hash must be 64 hex digits");
  if (absl::Status s = CheckSnapshot(files); !s.ok()) return s;
  TimestampMs now = Now();
  return WriteTx([&](Connection& c) { return PutSnapshotTx(c, hash, files, now); });
}

absl::StatusOr<Snapshot> Store::GetSnapshot(const std::string& hash) const {
  return Read<Snapshot>([&](Connection& c) -> absl::StatusOr<Snapshot> {
    STORE_ASSIGN_OR_RETURN(Statement head,
                           c.Prepare("SELECT files FROM code_snapshots WHERE hash = ?"));
    head.BindAll(hash);
    STORE_ASSIGN_OR_RETURN(bool found, head.Step());
    if (!found) return absl::NotFoundError("no code snapshot with hash " + hash);
    STORE_ASSIGN_OR_RETURN(
        Statement stmt,
        c.Prepare("SELECT path, executable, content FROM code_snapshot_files WHERE hash = ? "
                  "ORDER BY path"));
    stmt.BindAll(hash);
    Snapshot files;
    while (true) {
      STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      files.push_back({stmt.Text(0), stmt.Text(2), stmt.Int(1) != 0});
    }
    if (static_cast<int64_t>(files.size()) != head.Int(0)) {
      return absl::DataLossError("code snapshot " + hash + " is missing files");
    }
    return files;
  });
}

absl::StatusOr<int64_t> Store::CountSnapshots() const {
  return Read<int64_t>([&](Connection& c) -> absl::StatusOr<int64_t> {
    STORE_ASSIGN_OR_RETURN(Statement stmt, c.Prepare("SELECT COUNT(*) FROM code_snapshots"));
    STORE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    return row ? stmt.Int(0) : 0;
  });
}

}  // namespace ablate
