// Translation between the coordinator's domain types (server/core/model.h) and the ablate.v1
// protobuf messages: the only place that knows both. Messages only, no gRPC (the scheduler links
// this); absl::Status -> grpc::Status is server/rpc/grpc_status.h.
#ifndef ABLATE_SERVER_CONVERT_CONVERT_H_
#define ABLATE_SERVER_CONVERT_CONVERT_H_

#include <map>
#include <optional>
#include <vector>

#include "ablate/v1/types.pb.h"
#include "absl/status/status.h"
#include "common/code_snapshot.h"
#include "server/core/model.h"
#include "server/sweep/script_spec.h"

namespace ablate {


v1::SweepState ToProto(SweepState s);
v1::RunState ToProto(RunState s);
// UNSPECIFIED maps to nullopt (no filter).
std::optional<SweepState> FromProto(v1::SweepState s);
std::optional<RunState> FromProto(v1::RunState s);

void ToProto(const Sweep& in, v1::Sweep* out);
void ToProto(const ImportedLogInfo& in, v1::ImportedLog* out);
// Sweep.dispatch_blocks from the sweep's runs: blocks in dispatch order, each block's variant
// names in dispatch order (rank, then run id).
void FillDispatchBlocks(std::vector<Run> runs, v1::Sweep* out);
void ToProto(const std::map<RunState, int>& counts, v1::RunCounts* out);
void ToProto(const Variant& in, v1::Variant* out);
void ToProto(const Run& in, v1::Run* out);
void ToProto(const RunSummary& in, v1::RunSummary* out);
void ToProto(const Attempt& in, v1::Attempt* out);
void ToProto(const Worker& in, v1::Worker* out);
// A worker's allocation as of `now_ms` (wall clock): pool, job id, seconds left (-1 unknown).
void ToProto(const WorkerAllocation& in, int64_t now_ms, v1::Worker* out);
void ToProto(const MetricPoint& in, v1::MetricPoint* out);
void ToProto(const Event& in, v1::Event* out);

RunSummary FromProto(const v1::RunSummary& in);
MetricPoint FromProto(const v1::MetricPoint& in);
GpuInfo FromProto(const v1::Gpu& in);

// Code snapshots of script runs (issue 14).
void SnapshotToProto(const std::string& hash, const Snapshot& files, v1::CodeSnapshot* out);
// The uploads of a submit, keyed by their `script:` value; files sorted by path.
ScriptUploads UploadsFromProto(
    const google::protobuf::RepeatedPtrField<v1::ScriptUpload>& uploads);

}  // namespace ablate

#endif  // ABLATE_SERVER_CONVERT_CONVERT_H_
