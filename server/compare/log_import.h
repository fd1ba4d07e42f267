// Record logs stored as an imported sweep (issue 39; `ablate import`, the dashboard's upload):
// each log parsed strictly (common/record_log.h), one variant per record, one succeeded run per
// log with its curve, summary, script snapshot and the log's facts (Store::ImportSweep).
#ifndef ABLATE_SERVER_COMPARE_LOG_IMPORT_H_
#define ABLATE_SERVER_COMPARE_LOG_IMPORT_H_

#include "ablate/v1/client.pb.h"
#include "absl/status/status.h"
#include "server/store/store.h"

namespace ablate {

// INVALID_ARGUMENT naming every bad log ("FILE:LINE: what") with nothing stored, unless
// req.skip_bad (then resp->skipped lists them); a bad request field (names, hardware, target,
// more than 1000 logs) is INVALID_ARGUMENT before any log is read. Fills `resp` with the stored
// sweep (full: variants and spec text) and its runs, each with its ImportedLog; on a dry run with
// what would be stored (ids 0).
absl::Status ImportRecordLogs(Store& store, const v1::ImportLogsRequest& req,
                              v1::ImportLogsResponse* resp);

}  // namespace ablate

#endif  // ABLATE_SERVER_COMPARE_LOG_IMPORT_H_
