// The worker-facing gRPC service (ablate.v1.WorkerService): one bidirectional Connect stream per
// worker. Checks the worker token, expects Hello first, then hands every message to the
// Dispatcher and writes its replies back. Thread-safe.
#ifndef ABLATE_SERVER_RPC_WORKER_SERVICE_H_
#define ABLATE_SERVER_RPC_WORKER_SERVICE_H_

#include "ablate/v1/worker.grpc.pb.h"
#include "server/dispatch/dispatcher.h"
#include "server/rpc/token_auth.h"
#include "server/store/store.h"

namespace ablate {

class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  // `dispatcher`, `auth` and `store` must outlive the service. Without a store GetSnapshot
  // answers UNIMPLEMENTED.
  WorkerServiceImpl(Dispatcher* dispatcher, const TokenAuth* auth, const Store* store = nullptr)
      : dispatcher_(dispatcher), auth_(auth), store_(store) {}

  grpc::Status Connect(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override;
  // A stored code snapshot by hash (issue 14), for workers with the worker token.
  grpc::Status GetSnapshot(grpc::ServerContext* ctx, const v1::GetSnapshotRequest* req,
                           v1::CodeSnapshot* resp) override;

 private:
  Dispatcher* const dispatcher_;
  const TokenAuth* const auth_;
  const Store* const store_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_WORKER_SERVICE_H_
