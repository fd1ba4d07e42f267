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

// Connect reads the stream's messages as raw bytes and parses them itself, so that a message it
// cannot parse (a string field that is not valid UTF-8) is answered with a refusal that ends the
// attempt it names, instead of ending the stream (the worker would reconnect and send it again,
// forever).
class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  using RawStream = grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;
  // `dispatcher`, `auth` and `store` must outlive the service. Without a store GetSnapshot
  // answers UNIMPLEMENTED.
  WorkerServiceImpl(Dispatcher* dispatcher, const TokenAuth* auth, const Store* store = nullptr);

  // The worker stream over raw bytes (installed in place of the generated Connect handler).
  grpc::Status ConnectRaw(grpc::ServerContext* ctx, RawStream* stream);
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
