// Code snapshots of script runs (issue 14): the exact bytes of a training script (one file, or a
// folder such as a package), content-addressed by SHA-256 so that a run can always be traced to
// what it ran. The CLI reads them at submit, the coordinator stores each once by hash, workers
// cache them by hash and write them into the run folder. Plain data and files; no gRPC or SQLite.
#ifndef ABLATE_COMMON_CODE_SNAPSHOT_H_
#define ABLATE_COMMON_CODE_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ablate {

// The most one snapshot may hold (all its files together).
inline constexpr int64_t kMaxSnapshotBytes = int64_t{16} << 20;

struct SnapshotFile {
  // Relative, '/'-separated, no "." or ".." parts. The first part is the script's own name:
  // "train_gpt.py" for a file, "mypkg/__main__.py" for a folder mypkg.
  std::string path;
  std::string content;
  bool executable = false;
  bool operator==(const SnapshotFile&) const = default;
};

// Sorted by path, paths unique (SortSnapshot makes it so).
using Snapshot = std::vector<SnapshotFile>;

// What the client read for one `script:` (or `decompose:` from/to) value of a spec: the files,
// or why it could not (`error`, e.g. "no such file or folder: /home/me/train_gpt.py" or "holds
// 17000000 bytes; ..."). The request carries them; the coordinator checks them.
struct ScriptUpload {
  std::string error;
  Snapshot files;
};
// Keyed by the value exactly as the spec writes it.
using ScriptUploads = std::map<std::string, ScriptUpload>;

void SortSnapshot(Snapshot* files);
int64_t SnapshotBytes(const Snapshot& files);

// Lowercase hex SHA-256 over each file's path, mode, size and bytes in path order.
// REQUIRES: sorted (SortSnapshot).
std::string SnapshotHash(const Snapshot& files);

// INVALID_ARGUMENT unless `path` is relative, '/'-separated and free of "", "." and ".." parts
// (a snapshot can never write outside the folder it is unpacked in).
absl::Status CheckSnapshotPath(std::string_view path);
// Every path checked, no duplicates, at most kMaxSnapshotBytes.
absl::Status CheckSnapshot(const Snapshot& files);

// Reads a script from disk: a regular file (one entry, its base name), or a folder (every
// regular file under it, `__pycache__` folders skipped, paths starting with the folder's name).
// NOT_FOUND when `path` does not exist, RESOURCE_EXHAUSTED (naming the size) when its files
// together exceed kMaxSnapshotBytes, INVALID_ARGUMENT for anything else (a socket, an empty
// folder), INTERNAL for read errors.
absl::StatusOr<Snapshot> ReadSnapshot(const std::string& path);

// Writes the files under `dir` (created as needed), executable bits included. The paths are
// checked first (CheckSnapshotPath); INTERNAL for file system errors.
absl::Status WriteSnapshot(const Snapshot& files, const std::string& dir);

// A unified diff (3 lines of context) from `from` to `to`, file by file ("--- a/path",
// "+++ b/path", "@@ -l,n +l,n @@"); added and removed files diff against nothing. "" when equal.
// Files are matched by their place inside the script (the path after its first part), so a
// renamed script (train_gpt.py -> train_gpt_myidea.py) diffs against its original.
// Files too large to compare line by line get one line saying that they differ.
std::string UnifiedDiff(const Snapshot& from, const Snapshot& to);

// One line of a line diff: kind ' ' (in both), '-' (only in `from`), '+' (only in `to`);
// from_line / to_line are the 0-based counts of `from` / `to` lines before it.
struct LineEdit {
  char kind;
  int from_line, to_line;
  std::string_view text;
};

// The line diff (longest common subsequence, removals before additions as diff -u prints them)
// behind UnifiedDiff, over lines the caller has split; the views point into `from` and `to`.
// nullopt when the files are too large to compare line by line.
std::optional<std::vector<LineEdit>> DiffLines(const std::vector<std::string_view>& from,
                                               const std::vector<std::string_view>& to);

}  // namespace ablate

#endif  // ABLATE_COMMON_CODE_SNAPSHOT_H_
