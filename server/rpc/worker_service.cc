// Connect: the worker stream, parsed here from raw bytes.
#include "server/rpc/worker_service.h"

#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/support/method_handler.h>

#include <iostream>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "common/utf8_text.h"
#include "server/convert/convert.h"
#include "server/rpc/grpc_status.h"

namespace ablate {
namespace {

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// What a message that did not parse names, read from its raw fields: the attempt (field 1) and
// fencing token (field 2) of its RunStarted, MetricBatch or RunFinished, and the first string
// field that is not UTF-8.
struct RawFacts {
  int64_t attempt_id = 0;
  int64_t fencing_token = 0;
  std::string why = "the message could not be parsed as a WorkerMessage";
};

RawFacts ReadRaw(const std::string& bytes) {
  RawFacts facts;
  google::protobuf::UnknownFieldSet outer;
  if (!outer.ParseFromString(bytes)) return facts;
  for (int i = 0; i < outer.field_count(); ++i) {
    const google::protobuf::UnknownField& f = outer.field(i);
    const google::protobuf::FieldDescriptor* kind =
        v1::WorkerMessage::descriptor()->FindFieldByNumber(f.number());
    if (f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED || kind == nullptr ||
        kind->message_type() == nullptr) {
      continue;
    }
    google::protobuf::UnknownFieldSet inner;
    if (!inner.ParseFromString(f.length_delimited())) continue;
    const bool names_attempt = f.number() == v1::WorkerMessage::kRunStartedFieldNumber ||
                               f.number() == v1::WorkerMessage::kMetricsFieldNumber ||
                               f.number() == v1::WorkerMessage::kRunFinishedFieldNumber;
    for (int k = 0; k < inner.field_count(); ++k) {
      const google::protobuf::UnknownField& g = inner.field(k);
      if (names_attempt && g.type() == google::protobuf::UnknownField::TYPE_VARINT) {
        if (g.number() == 1) facts.attempt_id = static_cast<int64_t>(g.varint());
        if (g.number() == 2) facts.fencing_token = static_cast<int64_t>(g.varint());
      }
      const google::protobuf::FieldDescriptor* field =
          kind->message_type()->FindFieldByNumber(g.number());
      if (g.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED && field != nullptr &&
          field->type() == google::protobuf::FieldDescriptor::TYPE_STRING &&
          !IsValidUtf8(g.length_delimited())) {
        facts.why = kind->message_type()->name() + "." + field->name() + " (" +
                    std::to_string(g.length_delimited().size()) + " bytes) is not valid UTF-8";
      }
    }
  }
  return facts;
}

// Writes to one stream from any thread; after Close() (the handler returned) writes are dropped,
// because the stream object is gone.
class StreamSession : public WorkerSession {
 public:
  explicit StreamSession(WorkerServiceImpl::RawStream* stream) : stream_(stream) {}

  bool Send(const v1::CoordinatorMessage& msg) override {
    std::string bytes = msg.SerializeAsString();
    grpc::Slice slice(bytes);
    grpc::ByteBuffer buffer(&slice, 1);
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_ == nullptr) return false;
    return stream_->Write(buffer);
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    stream_ = nullptr;
  }

 private:
  std::mutex mu_;
  WorkerServiceImpl::RawStream* stream_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(Dispatcher* dispatcher, const TokenAuth* auth,
                                     const Store* store)
    : dispatcher_(dispatcher), auth_(auth), store_(store) {
  // Connect is method 0 of WorkerService: its handler reads raw bytes instead of parsed messages.
  MarkMethodStreamed(
      0, new grpc::internal::BidiStreamingHandler<WorkerServiceImpl, grpc::ByteBuffer,
                                                  grpc::ByteBuffer>(
             [](WorkerServiceImpl* service, grpc::ServerContext* ctx, RawStream* stream) {
               return service->ConnectRaw(ctx, stream);
             },
             this));
}

grpc::Status WorkerServiceImpl::ConnectRaw(grpc::ServerContext* ctx, RawStream* stream) {
  if (grpc::Status s = auth_->CheckWorker(*ctx); !s.ok()) return s;
  grpc::ByteBuffer buffer;
  v1::WorkerMessage msg;
  if (!stream->Read(&buffer)) return grpc::Status::OK;
  if (!msg.ParseFromString(Bytes(buffer)) || !msg.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message on a worker stream must be a Hello that parses");
  }
  const std::string worker_id = msg.hello().worker_id();
  auto session = std::make_shared<StreamSession>(stream);
  // Register sends the Welcome itself, before any Assignment can reach this stream.
  absl::StatusOr<v1::Welcome> welcome = dispatcher_->Register(msg.hello(), session);
  if (!welcome.ok()) return ToGrpc(welcome.status());
  while (stream->Read(&buffer)) {
    std::vector<v1::CoordinatorMessage> replies;
    const std::string bytes = Bytes(buffer);
    if (!msg.ParseFromString(bytes)) {
      RawFacts facts = ReadRaw(bytes);
      replies = dispatcher_->OnUnparsable(worker_id, facts.attempt_id, facts.fencing_token,
                                          facts.why);
      for (const v1::CoordinatorMessage& r : replies) session->Send(r);
      continue;
    }
    switch (msg.msg_case()) {
      case v1::WorkerMessage::kHeartbeat:
        dispatcher_->OnHeartbeat(worker_id);
        dispatcher_->OnDraining(worker_id, msg.heartbeat().draining());
        if (msg.heartbeat().has_datasets() &&
            !Dispatcher::CheckDatasets(msg.heartbeat().datasets().names()).ok()) {
          std::cerr << "ablate-coordinator: the dataset list of worker " << worker_id
                    << " ignored: "
                    << Dispatcher::CheckDatasets(msg.heartbeat().datasets().names()).message()
                    << std::endl;
        } else if (msg.heartbeat().has_datasets()) {
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
