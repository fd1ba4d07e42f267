// Connect: the worker stream.
#include "server/rpc/worker_service.h"

#include <mutex>

#include "server/rpc/convert.h"

namespace ablate {
namespace {

// Writes to one stream from any thread; after Close() (the handler returned) writes are dropped,
// because the stream object is gone.
class StreamSession : public WorkerSession {
 public:
  explicit StreamSession(
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream)
      : stream_(stream) {}

  bool Send(const v1::CoordinatorMessage& msg) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_ == nullptr) return false;
    return stream_->Write(msg);
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    stream_ = nullptr;
  }

 private:
  std::mutex mu_;
  grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream_;  // guarded by mu_
};

}  // namespace

grpc::Status WorkerServiceImpl::Connect(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) {
  if (grpc::Status s = auth_->CheckWorker(*ctx); !s.ok()) return s;
  v1::WorkerMessage msg;
  if (!stream->Read(&msg)) return grpc::Status::OK;
  if (!msg.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message on a worker stream must be Hello");
  }
  const std::string worker_id = msg.hello().worker_id();
  auto session = std::make_shared<StreamSession>(stream);
  // Register sends the Welcome itself, before any Assignment can reach this stream.
  absl::StatusOr<v1::Welcome> welcome = dispatcher_->Register(msg.hello(), session);
  if (!welcome.ok()) return ToGrpc(welcome.status());
  while (stream->Read(&msg)) {
    std::vector<v1::CoordinatorMessage> replies;
    switch (msg.msg_case()) {
      case v1::WorkerMessage::kHeartbeat:
        dispatcher_->OnHeartbeat(worker_id);
        dispatcher_->OnDraining(worker_id, msg.heartbeat().draining());
        if (msg.heartbeat().has_datasets()) {
          const auto& names = msg.heartbeat().datasets().names();
          dispatcher_->OnDatasets(worker_id, {names.begin(), names.end()});
        }
        break;
      case v1::WorkerMessage::kRunStarted:
        dispatcher_->OnRunStarted(worker_id, msg.run_started());
        break;
      case v1::WorkerMessage::kMetrics: replies = dispatcher_->OnMetrics(worker_id, msg.metrics()); break;
      case v1::WorkerMessage::kRunFinished:
        replies = dispatcher_->OnRunFinished(worker_id, msg.run_finished());
        break;
      case v1::WorkerMessage::kNcclId: dispatcher_->OnNcclId(worker_id, msg.nccl_id()); break;
      case v1::WorkerMessage::kRelease: dispatcher_->OnRelease(worker_id, msg.release()); break;
      default: break;  // a second Hello is ignored
    }
    for (const v1::CoordinatorMessage& r : replies) session->Send(r);
  }
  session->Close();
  dispatcher_->Unregister(worker_id, session.get());
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::GetSnapshot(grpc::ServerContext* ctx,
                                            const v1::GetSnapshotRequest* req,
                                            v1::CodeSnapshot* resp) {
  if (grpc::Status s = auth_->CheckWorker(*ctx); !s.ok()) return s;
  if (store_ == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this coordinator stores no snapshots");
  }
  absl::StatusOr<Snapshot> files = store_->GetSnapshot(req->hash());
  if (!files.ok()) return ToGrpc(files.status());
  SnapshotToProto(req->hash(), *files, resp);
  return grpc::Status::OK;
}

}  // namespace ablate
