// The worker-facing gRPC service (ablate.v1.WorkerService): one bidirectional Connect stream per
// worker. Checks the worker token, expects Hello first, then hands every message to the
// Dispatcher and writes its replies back. Thread-safe.
//
// Connect runs on gRPC's callback API (issue 28): a stream holds no thread. Its messages are
// handled, in the order they arrived, by a fixed StreamPool (the blocking part: the dispatcher's
// store writes, which the store's writer commits in groups across streams); its outgoing
// messages (replies, Assignments and Cancels from any thread) are queued and written one at a
// time. A stream reads ahead at most kMaxQueuedMessages messages / kMaxQueuedBytes bytes that
// are not handled yet; a worker that does not read what is sent to it (more than
// kMaxUnsentMessages or kMaxUnsentBytes queued) has its stream cancelled (it reconnects).
#ifndef ABLATE_SERVER_RPC_WORKER_SERVICE_H_
#define ABLATE_SERVER_RPC_WORKER_SERVICE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "ablate/v1/worker.grpc.pb.h"
#include "server/dispatch/dispatcher.h"
#include "server/rpc/stream_pool.h"
#include "server/rpc/token_auth.h"
#include "server/store/store.h"

namespace ablate {

// Connect reads the stream's messages as raw bytes and parses them itself, so that a message it
// cannot parse (a string field that is not valid UTF-8) is answered with a refusal that ends the
// attempt it names, instead of ending the stream (the worker would reconnect and send it again,
// forever).
class WorkerServiceImpl final
    : public v1::WorkerService::WithRawCallbackMethod_Connect<v1::WorkerService::Service> {
 public:
  using RawReactor = grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;
  static constexpr int kDefaultStreamThreads = 16;
  static constexpr size_t kMaxQueuedMessages = 64;
  static constexpr size_t kMaxQueuedBytes = size_t{16} << 20;
  static constexpr size_t kMaxUnsentMessages = 16384;
  static constexpr size_t kMaxUnsentBytes = size_t{64} << 20;
  // Metric batches of one stream that may wait for the store at once (Dispatcher::OnMetricsAsync);
  // any other message waits until those before it are committed.
  static constexpr int kMaxAppendsInFlight = 256;

  // `dispatcher`, `auth` and `store` must outlive the service, and the service must outlive the
  // grpc::Server it is registered with (its pool finishes the streams during Shutdown). Without
  // a store GetSnapshot answers UNIMPLEMENTED. `stream_threads`: the pool's size.
  WorkerServiceImpl(Dispatcher* dispatcher, const TokenAuth* auth, const Store* store = nullptr,
                    int stream_threads = kDefaultStreamThreads);
  ~WorkerServiceImpl() override;

  // The worker stream over raw bytes (the generated raw callback method).
  RawReactor* Connect(grpc::CallbackServerContext* ctx) override;
  // A stored code snapshot by hash (issue 14), for workers with the worker token.
  grpc::Status GetSnapshot(grpc::ServerContext* ctx, const v1::GetSnapshotRequest* req,
                           v1::CodeSnapshot* resp) override;

 private:
  friend class WorkerStreamCore;
  // One message after the Hello (not a metric batch), from the stream of `worker_id`; replies
  // go to `session`.
  void Handle(const std::string& worker_id, const v1::WorkerMessage& msg, WorkerSession& session);
  // A message that did not parse (Dispatcher::OnUnparsable).
  void HandleUnparsable(const std::string& worker_id, const std::string& bytes,
                        WorkerSession& session);

  Dispatcher* const dispatcher_;
  const TokenAuth* const auth_;
  const Store* const store_;
  std::unique_ptr<StreamPool> pool_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_WORKER_SERVICE_H_
