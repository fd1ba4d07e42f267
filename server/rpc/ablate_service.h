// The client-facing gRPC service (ablate.v1.AblateService): thin handlers that check the client
// token, translate requests to store and sweep-spec calls, and translate results back.
// Thread-safe: gRPC calls handlers from many threads; all shared state lives in the Store
// (thread-safe) and the ChangeFeed.
//
// WatchSweep and WatchRun run on gRPC's callback API (watch_streams.h): a watch stream holds no
// thread; the streams are woken by one WatchScheduler (a timer thread and a small pool, created
// at the first watch call) however many there are. Every other method is synchronous.
#ifndef ABLATE_SERVER_RPC_ABLATE_SERVICE_H_
#define ABLATE_SERVER_RPC_ABLATE_SERVICE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "ablate/v1/client.grpc.pb.h"
#include "server/core/change_feed.h"
#include "server/rpc/sweep_watch_cache.h"
#include "server/rpc/token_auth.h"
#include "server/rpc/watch_scheduler.h"
#include "server/store/store.h"

namespace ablate {

// What the client service needs from the dispatcher, as plain functions so that the service
// can run without one (tests, dry runs).
struct ServiceHooks {
  // Called with the run ids a cancel made inactive, so their trainers are stopped.
  std::function<void(const std::vector<int64_t>& run_ids)> on_cancel;
  // Called after a sweep was stored, so that scheduling looks at it at once.
  std::function<void()> on_submit;
  // Runs each connected worker executes now.
  std::function<std::map<std::string, std::vector<int64_t>>()> runs_by_worker;
  // By worker id: Slurm pilots' allocations and draining workers (ListWorkers).
  std::function<std::map<std::string, WorkerAllocation>()> worker_allocations;
  // Why queued runs wait, by run id, from the last scheduling pass ("no connected worker has
  // dataset 'fineweb10B'"). GetSweep sums them up in Sweep.waiting_reasons.
  std::function<std::map<int64_t, std::string>()> waiting_reasons;
  // Checks a parsed sweep against what only the running coordinator knows (its pools: the pool
  // exists, Slurm can ever hold its runs) before anything is stored; a non-OK status rejects
  // the submission with that status (also for dry runs). `runs_scripts`: its variants run the
  // researcher's script (then a pool's pilots must allow scripts).
  std::function<absl::Status(const Sweep&, bool runs_scripts)> check_sweep;
  // The pools and their allocations (ListPools); unset: the coordinator has no pools.
  std::function<std::vector<v1::Pool>()> list_pools;
  // PoolAction: what was done in words, or the error (unset: no pools).
  std::function<absl::StatusOr<std::string>(const std::string& pool, const std::string& host,
                                            const std::string& action)>
      pool_action;
};

class AblateServiceImpl final
    : public v1::AblateService::WithCallbackMethod_WatchSweep<
          v1::AblateService::WithCallbackMethod_WatchRun<v1::AblateService::Service>> {
 public:
  // The watch streams' pool (WatchScheduler::Options::threads).
  static constexpr int kWatchThreads = 4;

  // `store`, `feed` and `auth` must outlive the service.
  AblateServiceImpl(Store* store, ChangeFeed* feed, const TokenAuth* auth,
                    ServiceHooks hooks = {});

  grpc::Status SubmitSweep(grpc::ServerContext* ctx, const v1::SubmitSweepRequest* req,
                           v1::SubmitSweepResponse* resp) override;
  // The client token is checked before any chunk is read; RESOURCE_EXHAUSTED past
  // kMaxUploadBytes (common/message_limits.h), then as SubmitSweep.
  grpc::Status UploadSweep(grpc::ServerContext* ctx,
                           grpc::ServerReader<v1::SubmitSweepChunk>* reader,
                           v1::SubmitSweepResponse* resp) override;
  grpc::Status ListSweeps(grpc::ServerContext* ctx, const v1::ListSweepsRequest* req,
                          v1::ListSweepsResponse* resp) override;
  grpc::Status GetSweep(grpc::ServerContext* ctx, const v1::GetSweepRequest* req,
                        v1::Sweep* resp) override;
  grpc::Status CancelSweep(grpc::ServerContext* ctx, const v1::CancelSweepRequest* req,
                           v1::Sweep* resp) override;
  grpc::Status ListRuns(grpc::ServerContext* ctx, const v1::ListRunsRequest* req,
                        v1::ListRunsResponse* resp) override;
  grpc::Status GetRun(grpc::ServerContext* ctx, const v1::GetRunRequest* req,
                      v1::Run* resp) override;
  // Callback streams (watch_streams.h).
  grpc::ServerWriteReactor<v1::SweepUpdate>* WatchSweep(grpc::CallbackServerContext* ctx,
                                                        const v1::WatchSweepRequest* req) override;
  grpc::ServerWriteReactor<v1::RunUpdate>* WatchRun(grpc::CallbackServerContext* ctx,
                                                    const v1::WatchRunRequest* req) override;
  grpc::Status GetMetrics(grpc::ServerContext* ctx, const v1::GetMetricsRequest* req,
                          v1::GetMetricsResponse* resp) override;
  grpc::Status ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req,
                           v1::ListWorkersResponse* resp) override;
  grpc::Status ListPresets(grpc::ServerContext* ctx, const v1::ListPresetsRequest* req,
                           v1::ListPresetsResponse* resp) override;
  grpc::Status ListPools(grpc::ServerContext* ctx, const v1::ListPoolsRequest* req,
                         v1::ListPoolsResponse* resp) override;  // ablate_service_pools.cc
  grpc::Status PoolAction(grpc::ServerContext* ctx, const v1::PoolActionRequest* req,
                          v1::PoolActionResponse* resp) override;  // ablate_service_pools.cc
  // Defined in ablate_service_compare.cc: thin handlers over the views of server/compare/
  // (compare_queries.h, plan_queries.h).
  grpc::Status CompareSweep(grpc::ServerContext* ctx, const v1::CompareSweepRequest* req,
                            v1::CompareSweepResponse* resp) override;
  grpc::Status ListRecords(grpc::ServerContext* ctx, const v1::ListRecordsRequest* req,
                           v1::ListRecordsResponse* resp) override;
  grpc::Status PlanSweep(grpc::ServerContext* ctx, const v1::PlanSweepRequest* req,
                         v1::PlanSweepResponse* resp) override;
  grpc::Status ExportSweep(grpc::ServerContext* ctx, const v1::ExportSweepRequest* req,
                           grpc::ServerWriter<v1::ExportedRun>* writer) override;
  // Record logs as an imported sweep (ablate_service_import.cc): the token is checked before any
  // chunk is read, RESOURCE_EXHAUSTED past kMaxUploadBytes, then every log parsed here.
  grpc::Status GetCodeSnapshot(grpc::ServerContext* ctx, const v1::GetCodeSnapshotRequest* req,
                               v1::CodeSnapshot* resp) override;
  grpc::Status ImportLogs(grpc::ServerContext* ctx,
                          grpc::ServerReader<v1::SubmitSweepChunk>* reader,
                          v1::ImportLogsResponse* resp) override;

 private:
  // Fills `out` with the sweep and its run counts; with `full`, also variants and spec text.
  absl::Status FillSweep(int64_t id, bool full, v1::Sweep* out);
  // The watch streams' scheduler, started on first use.
  WatchScheduler* Scheduler();

  Store* const store_;
  ChangeFeed* const feed_;
  const TokenAuth* const auth_;
  const ServiceHooks hooks_;
  std::unique_ptr<SweepWatchCache> watch_cache_;  // WatchSweep's shared polls
  std::once_flag scheduler_once_;
  std::unique_ptr<WatchScheduler> scheduler_;  // last: stopped before the members above go
};

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_ABLATE_SERVICE_H_
