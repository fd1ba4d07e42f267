// The worker-facing gRPC service (ablate.v1.WorkerService): one bidirectional Connect stream per
// worker. Checks the worker token, expects Hello first, then hands every message to the
// Dispatcher and writes its replies back. Thread-safe.
#ifndef ABLATE_SERVER_RPC_WORKER_SERVICE_H_
#define ABLATE_SERVER_RPC_WORKER_SERVICE_H_

#include "ablate/v1/worker.grpc.pb.h"
#include "server/dispatch/dispatcher.h"
#include "server/rpc/token_auth.h"

namespace ablate {

class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  // `dispatcher` and `auth` must outlive the service.
  WorkerServiceImpl(Dispatcher* dispatcher, const TokenAuth* auth)
      : dispatcher_(dispatcher), auth_(auth) {}

  grpc::Status Connect(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override;

 private:
  Dispatcher* const dispatcher_;
  const TokenAuth* const auth_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_WORKER_SERVICE_H_
