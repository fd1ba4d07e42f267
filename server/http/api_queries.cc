// In-process calls of the client service's handlers, translated back to absl::Status.
#include "server/http/api_queries.h"

#include <grpcpp/server_context.h>

#include "absl/strings/str_cat.h"

namespace ablate {

ApiQueries::ApiQueries(Store* store, ChangeFeed* feed, ServiceHooks hooks,
                       size_t curve_cache_points)
    : store_(store),
      service_(store, feed, &no_token_, std::move(hooks)),
      curves_(store, curve_cache_points) {}

template <class Req, class Resp>
absl::StatusOr<Resp> ApiQueries::Call(Handler<Req, Resp> handler, const Req& req) {
  grpc::ServerContext context;  // carries no metadata; no_token_ requires none
  Resp resp;
  grpc::Status s = (service_.*handler)(&context, &req, &resp);
  if (!s.ok())
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  return resp;
}

absl::StatusOr<v1::ListSweepsResponse> ApiQueries::ListSweeps(const v1::ListSweepsRequest& req) {
  return Call(&AblateServiceImpl::ListSweeps, req);
}

absl::StatusOr<v1::Sweep> ApiQueries::GetSweep(int64_t sweep_id) {
  v1::GetSweepRequest req;
  req.set_id(sweep_id);
  return Call(&AblateServiceImpl::GetSweep, req);
}

absl::StatusOr<v1::ListRunsResponse> ApiQueries::ListRuns(const v1::ListRunsRequest& req) {
  return Call(&AblateServiceImpl::ListRuns, req);
}

absl::StatusOr<v1::Run> ApiQueries::GetRun(int64_t run_id) {
  v1::GetRunRequest req;
  req.set_id(run_id);
  return Call(&AblateServiceImpl::GetRun, req);
}

absl::StatusOr<v1::ListWorkersResponse> ApiQueries::ListWorkers() {
  return Call(&AblateServiceImpl::ListWorkers, v1::ListWorkersRequest());
}

absl::StatusOr<v1::ListPoolsResponse> ApiQueries::ListPools() {
  return Call(&AblateServiceImpl::ListPools, v1::ListPoolsRequest());
}

absl::StatusOr<v1::ListPresetsResponse> ApiQueries::ListPresets() {
  return Call(&AblateServiceImpl::ListPresets, v1::ListPresetsRequest());
}

absl::StatusOr<std::string> ApiQueries::RunCurveJson(int64_t run_id, int max_points,
                                                     const SeriesSet& series) {
  absl::StatusOr<Run> run = store_->GetRun(run_id);
  if (!run.ok()) return run.status();
  return curves_.CurveJson(*run, max_points, series);
}

absl::StatusOr<std::string> ApiQueries::SweepCurvesJson(int64_t sweep_id, int max_points,
                                                        const SeriesSet& series) {
  if (absl::StatusOr<Sweep> sweep = store_->GetSweep(sweep_id); !sweep.ok()) {
    return sweep.status();
  }
  RunFilter filter;
  filter.sweep_id = sweep_id;
  absl::StatusOr<std::vector<Run>> runs = store_->ListRuns(filter);
  if (!runs.ok()) return runs.status();
  std::string out =
      absl::StrCat("{\"sweep_id\":", sweep_id, ",\"max_points\":", max_points, ",\"runs\":[");
  bool first = true;
  for (const Run& run : *runs) {
    if (run.current_attempt_id == 0 && run.started_ms == 0) continue;  // never ran
    absl::StatusOr<std::string> curve = curves_.CurveJson(run, max_points, series);
    if (!curve.ok()) return curve.status();
    absl::StrAppend(&out, first ? "" : ",", *curve);
    first = false;
  }
  out.append("]}");
  return out;
}

absl::StatusOr<std::vector<Event>> ApiQueries::ListEvents(int64_t sweep_id, int64_t run_id,
                                                          int64_t after_id, int limit) const {
  if (sweep_id != 0) {
    if (absl::StatusOr<Sweep> sweep = store_->GetSweep(sweep_id); !sweep.ok()) {
      return sweep.status();
    }
  }
  if (run_id != 0) {
    if (absl::StatusOr<Run> run = store_->GetRun(run_id); !run.ok()) return run.status();
  }
  return store_->ListEvents(sweep_id, run_id, after_id, limit);
}

}  // namespace ablate
