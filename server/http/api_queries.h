// The dashboard's reads. Every message the JSON API returns is built by the client gRPC service's
// own handlers (AblateServiceImpl), called in-process, so that the HTTP API and gRPC cannot
// drift; the HTTP layer checks the client token itself. Curves and events, which gRPC streams or
// returns in another shape, are read from the Store directly.
// Thread-safe: the service handlers and the Store are.
#ifndef ABLATE_SERVER_HTTP_API_QUERIES_H_
#define ABLATE_SERVER_HTTP_API_QUERIES_H_

#include <cstdint>
#include <vector>

#include "ablate/v1/client.pb.h"
#include "absl/status/statusor.h"
#include "server/core/change_feed.h"
#include "server/http/curve_cache.h"
#include "server/http/metrics_json.h"
#include "server/rpc/ablate_service.h"
#include "server/rpc/token_auth.h"
#include "server/store/store.h"

namespace ablate {

class ApiQueries {
 public:
  // `store` and `feed` must outlive this object. `hooks` are the ones the gRPC service has
  // (current runs per worker, and whatever else GetSweep and ListWorkers ask the dispatcher).
  // `curve_cache_points`: raw points the curve cache may hold (0 = no cache).
  ApiQueries(Store* store, ChangeFeed* feed, ServiceHooks hooks, size_t curve_cache_points);

  // Status codes as the gRPC handlers return them (NOT_FOUND for an unknown id, ...).
  absl::StatusOr<v1::ListSweepsResponse> ListSweeps(const v1::ListSweepsRequest& req);
  absl::StatusOr<v1::Sweep> GetSweep(int64_t sweep_id);
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& req);
  absl::StatusOr<v1::Run> GetRun(int64_t run_id);
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers();
  absl::StatusOr<v1::ListPoolsResponse> ListPools();
  absl::StatusOr<v1::ListPresetsResponse> ListPresets();

  // The run's curve as JSON (metrics_json.h), downsampled to `max_points` (>= 2) per series as
  // Store::GetMetrics does, through the curve cache.
  absl::StatusOr<std::string> RunCurveJson(int64_t run_id, int max_points, const SeriesSet& series);
  // {"sweep_id":N,"max_points":N,"runs":[curve...]}: every run of the sweep that has had an
  // attempt, in run id order.
  absl::StatusOr<std::string> SweepCurvesJson(int64_t sweep_id, int max_points,
                                              const SeriesSet& series);
  // The step of the run's last stored point (INT64_MIN when none), through the curve cache.
  absl::StatusOr<int64_t> LastStep(const Run& run) { return curves_.LastStep(run); }
  // Events with id > after_id, oldest first (Store::ListEvents); NOT_FOUND for an unknown sweep or
  // run (0 = any).
  absl::StatusOr<std::vector<Event>> ListEvents(int64_t sweep_id, int64_t run_id, int64_t after_id,
                                                int limit) const;

  Store* store() const { return store_; }

 private:
  template <class Req, class Resp>
  using Handler = grpc::Status (AblateServiceImpl::*)(grpc::ServerContext*, const Req*, Resp*);
  template <class Req, class Resp>
  absl::StatusOr<Resp> Call(Handler<Req, Resp> handler, const Req& req);

  Store* const store_;
  const TokenAuth no_token_{"", ""};
  AblateServiceImpl service_;
  CurveCache curves_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_API_QUERIES_H_
