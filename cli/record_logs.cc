#include "cli/record_logs.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace ablate {

Snapshot ScriptSnapshot(const RecordLog& log) {
  if (log.script.empty()) return {};
  return {SnapshotFile{kRecordScriptName, log.script, false}};
}

absl::StatusOr<LoadedLog> LoadRecordLog(const std::string& path, double target) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": not a file"));
  if (st.st_size > kMaxRecordLogBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", st.st_size,
                                                   " bytes, more than the ",
                                                   kMaxRecordLogBytes >> 20,
                                                   " MiB a record log may hold"));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in && !in.eof()) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read"));
  LoadedLog out;
  out.path = path;
  out.text = bytes.str();
  absl::StatusOr<RecordLog> log = ParseRecordLog(out.text, path, target);
  if (!log.ok()) return log.status();
  out.log = *std::move(log);
  Snapshot script = ScriptSnapshot(out.log);
  if (!script.empty()) out.script_hash = SnapshotHash(script);
  return out;
}

std::vector<LoadedLog> LoadRecordLogs(const std::vector<std::string>& paths, double target,
                                      std::vector<std::string>* errors) {
  std::vector<LoadedLog> out;
  for (const std::string& path : paths) {
    absl::StatusOr<LoadedLog> one = LoadRecordLog(path, target);
    if (one.ok()) {
      out.push_back(*std::move(one));
    } else {
      errors->push_back(std::string(one.status().message()));
    }
  }
  return out;
}

}  // namespace ablate
