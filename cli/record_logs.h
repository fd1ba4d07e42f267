// Record logs read from disk for `ablate verify-record`, `ablate import` and `ablate decompose`
// (issue 39): each file read whole (bounded) and parsed strictly (common/record_log.h), with its
// script's snapshot hash so that "did these logs run the same code?" is a comparison of hashes.
#ifndef ABLATE_CLI_RECORD_LOGS_H_
#define ABLATE_CLI_RECORD_LOGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/code_snapshot.h"
#include "common/record_log.h"

namespace ablate {

// The name a record's script gets in its snapshot (what the records' own file is called).
inline constexpr const char* kRecordScriptName = "train_gpt.py";

struct LoadedLog {
  std::string path;  // as given
  std::string text;  // the file's bytes
  RecordLog log;
  std::string script_hash;  // SnapshotHash of ScriptSnapshot(); "" when the log has no script
};

// The log's script as a one-file snapshot (empty when it has none).
Snapshot ScriptSnapshot(const RecordLog& log);

// Reads and parses one file: NOT_FOUND / INVALID_ARGUMENT naming the path (and line).
// `target` as ParseRecordLog's.
absl::StatusOr<LoadedLog> LoadRecordLog(const std::string& path, double target);

// Reads every path; `errors` gets one line per file that failed, the others come back in order.
std::vector<LoadedLog> LoadRecordLogs(const std::vector<std::string>& paths, double target,
                                      std::vector<std::string>* errors);

}  // namespace ablate

#endif  // ABLATE_CLI_RECORD_LOGS_H_
