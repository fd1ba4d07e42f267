// Client service handlers for comparison, records, plan and export: token check, then the views of
// server/compare/ (shared with the dashboard), then the status mapped to gRPC's.
#include "server/rpc/ablate_service.h"

#include "server/compare/compare_queries.h"
#include "server/compare/plan_queries.h"
#include "server/rpc/grpc_status.h"

namespace ablate {

grpc::Status AblateServiceImpl::CompareSweep(grpc::ServerContext* ctx,
                                             const v1::CompareSweepRequest* req,
                                             v1::CompareSweepResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  absl::StatusOr<v1::CompareSweepResponse> comparison = BuildSweepComparison(
      *store_, req->id(), std::vector<int64_t>(req->with().begin(), req->with().end()));
  if (!comparison.ok()) return ToGrpc(comparison.status());
  *resp = *std::move(comparison);
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::ListRecords(grpc::ServerContext* ctx, const v1::ListRecordsRequest*,
                                            v1::ListRecordsResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  absl::StatusOr<v1::ListRecordsResponse> records = BuildRecordsTable(*store_);
  if (!records.ok()) return ToGrpc(records.status());
  *resp = *std::move(records);
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::PlanSweep(grpc::ServerContext* ctx,
                                          const v1::PlanSweepRequest* req,
                                          v1::PlanSweepResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  absl::StatusOr<v1::PlanSweepResponse> plan = BuildSweepPlan(*store_, *req);
  if (!plan.ok()) return ToGrpc(plan.status());
  *resp = *std::move(plan);
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::ExportSweep(grpc::ServerContext* ctx,
                                            const v1::ExportSweepRequest* req,
                                            grpc::ServerWriter<v1::ExportedRun>* writer) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  return ToGrpc(ExportSweepRuns(*store_, req->id(), [&](const v1::ExportedRun& run) {
    return !ctx->IsCancelled() && writer->Write(run);
  }));
}

}  // namespace ablate
