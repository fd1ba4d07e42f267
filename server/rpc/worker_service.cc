// Connect: the worker stream, parsed here from raw bytes.
#include "server/rpc/worker_service.h"

#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/support/method_handler.h>

#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace

// The state of one Connect stream that outlives its reactor: the dispatcher's session (Send)
// and what the pool's tasks use. The reactor (WorkerStream) is gRPC's; it is deleted in OnDone,
// after which `reactor_` is null and nothing reaches gRPC any more (Finish was called by then,
// so Send refuses). Every call into the reactor is made under `mu_`: gRPC runs a reaction that a
// Start* call triggers after the caller's own reaction returns, never inside the call.
class WorkerStreamCore : public WorkerSession,
                         public std::enable_shared_from_this<WorkerStreamCore> {
 public:
  WorkerStreamCore(WorkerServiceImpl* service, WorkerServiceImpl::RawReactor* reactor,
                   grpc::CallbackServerContext* ctx, grpc::ByteBuffer* read_buffer)
      : service_(service), reactor_(reactor), ctx_(ctx), read_buffer_(read_buffer) {}

  // Any thread: queues `msg` for writing. False once the stream is finishing or broken.
  bool Send(const v1::CoordinatorMessage& msg) override {
    std::string bytes = msg.SerializeAsString();
    grpc::Slice slice(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_ || broken_ || reactor_ == nullptr) return false;
    if (out_.size() >= WorkerServiceImpl::kMaxUnsentMessages ||
        unsent_bytes_ + bytes.size() > WorkerServiceImpl::kMaxUnsentBytes) {
      // The worker does not read: what it would get is unbounded. It reconnects.
      broken_ = true;
      ctx_->TryCancel();
      return false;
    }
    unsent_bytes_ += bytes.size();
    out_.emplace_back(&slice, 1);
    if (!writing_) {
      writing_ = true;
      reactor_->StartWrite(&out_.front());
    }
    return true;
  }

  // The reactor's constructor: checks the token, then starts reading.
  void Start() {
    grpc::Status auth = service_->auth_->CheckWorker(*ctx_);
    if (!auth.ok()) return RequestFinish(auth);
    std::lock_guard<std::mutex> lock(mu_);
    reactor_->StartRead(read_buffer_);
  }

  void OnRead(bool ok) {
    std::string bytes = ok ? Bytes(*read_buffer_) : std::string();
    bool schedule = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ok) {
        queued_bytes_ += bytes.size();
        in_.push_back(std::move(bytes));
        if (!finish_requested_ && !ReadAheadFull()) {
          reactor_->StartRead(read_buffer_);
        } else {
          read_paused_ = !finish_requested_;
        }
      } else {
        read_done_ = true;
      }
      schedule = !scheduled_;
      scheduled_ = true;
    }
    if (schedule) Schedule();
  }

  void OnWritten(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    unsent_bytes_ -= out_.front().Length();
    out_.pop_front();
    if (!ok) {
      broken_ = true;
      out_.clear();
      unsent_bytes_ = 0;
    }
    if (!out_.empty()) {
      reactor_->StartWrite(&out_.front());
      return;
    }
    writing_ = false;
    if (finish_requested_ && !finished_) {
      finished_ = true;
      reactor_->Finish(finish_status_);
    }
  }

  void OnCancelled() {
    bool schedule = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_done_ = true;
      schedule = !scheduled_;
      scheduled_ = true;
    }
    if (schedule) Schedule();
  }

  void OnDone() {
    std::lock_guard<std::mutex> lock(mu_);
    reactor_ = nullptr;
  }

 private:
  static constexpr int kBurst = 32;  // messages per pool task before it yields to other streams

  bool ReadAheadFull() const {
    return in_.size() >= WorkerServiceImpl::kMaxQueuedMessages ||
           queued_bytes_ >= WorkerServiceImpl::kMaxQueuedBytes;
  }

  void Schedule() {
    service_->pool_->Submit([self = shared_from_this()] { self->Drain(); });
  }

  // On the pool: handles queued messages in order; the stream's only task at any time.
  void Drain() {
    for (int n = 0; n < kBurst; ++n) {
      if (held_) {
        std::string bytes = std::move(*held_);
        held_.reset();
        if (!HandleOne(bytes)) return;  // held again: AppendDone reschedules
        continue;
      }
      std::string bytes;
      bool end = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (in_.empty()) {
          if (!read_done_ || ended_) {
            scheduled_ = false;
            return;
          }
          ended_ = end = true;
        } else {
          bytes = std::move(in_.front());
          in_.pop_front();
          queued_bytes_ -= bytes.size();
          if (read_paused_ && !finish_requested_ &&
              in_.size() <= WorkerServiceImpl::kMaxQueuedMessages / 2 &&
              queued_bytes_ <= WorkerServiceImpl::kMaxQueuedBytes / 2) {
            read_paused_ = false;
            reactor_->StartRead(read_buffer_);
          }
        }
      }
      if (end) {
        End();
        continue;  // the loop then finds nothing left and clears `scheduled_`
      }
      if (!HandleOne(bytes)) return;  // AppendDone reschedules
    }
    Schedule();  // more may be queued: give other streams a turn first
  }

  // Handles one message; false when it must wait for the stream's appends in flight (it is
  // then held, and handled first once they are done).
  bool HandleOne(const std::string& bytes) {
    if (refused_) return true;
    if (worker_id_.empty()) {
      Hello(bytes);
      return true;
    }
    v1::WorkerMessage msg;
    if (!msg.ParseFromString(bytes)) {
      if (!SettledOrHeld(bytes)) return false;
      service_->HandleUnparsable(worker_id_, bytes, *this);
      return true;
    }
    if (msg.has_metrics() && AppendsBelow(WorkerServiceImpl::kMaxAppendsInFlight)) {
      // Several batches of one stream may wait for the same group commit; their Acks follow
      // the ack contract (committed prefix), whatever order the completions come in.
      service_->dispatcher_->OnMetricsAsync(
          worker_id_, msg.metrics(),
          [self = shared_from_this()](std::vector<v1::CoordinatorMessage> replies) {
            for (const v1::CoordinatorMessage& r : replies) self->Send(r);
            self->AppendDone();
          });
      return true;
    }
    // Any other message sees every batch sent before it committed (RunFinished checks that).
    if (!SettledOrHeld(bytes)) return false;
    service_->Handle(worker_id_, msg, *this);
    return true;
  }

  // True when no append is in flight. Else `bytes` is held (before AppendDone can see that
  // Drain waits, so that the Drain it schedules finds it) and false.
  bool SettledOrHeld(const std::string& bytes) {
    held_ = bytes;
    if (!AppendsSettled()) return false;
    held_.reset();
    return true;
  }

  // Counts one more append in flight when fewer than `limit` are; else false.
  bool AppendsBelow(int limit) {
    std::lock_guard<std::mutex> lock(mu_);
    if (appends_in_flight_ >= limit) {
      return false;
    }
    ++appends_in_flight_;
    return true;
  }

  // True when no append is in flight; else the last one to finish schedules Drain again.
  bool AppendsSettled() {
    std::lock_guard<std::mutex> lock(mu_);
    if (appends_in_flight_ == 0) return true;
    waiting_for_appends_ = true;
    return false;
  }

  void AppendDone() {
    bool resume = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --appends_in_flight_;
      if (appends_in_flight_ == 0 && waiting_for_appends_) {
        waiting_for_appends_ = false;
        resume = true;  // Drain stopped without clearing `scheduled_`: nobody else schedules it
      }
    }
    if (resume) Schedule();
  }

  void Hello(const std::string& bytes) {
    v1::WorkerMessage msg;
    if (!msg.ParseFromString(bytes) || !msg.has_hello()) {
      refused_ = true;
      return RequestFinish(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       "the first message on a worker stream must be a Hello that parses"));
    }
    // Register sends the Welcome itself, before any Assignment can reach this stream.
    absl::StatusOr<v1::Welcome> welcome =
        service_->dispatcher_->Register(msg.hello(), shared_from_this());
    if (!welcome.ok()) {
      refused_ = true;
      return RequestFinish(ToGrpc(welcome.status()));
    }
    worker_id_ = msg.hello().worker_id();
  }

  // The worker's side ended (or the call was cancelled): as the synchronous handler did when its
  // reads ended, later Sends are refused, then the dispatcher forgets the session.
  void End() {
    RequestFinish(grpc::Status::OK);
    if (!worker_id_.empty()) service_->dispatcher_->Unregister(worker_id_, this);
  }

  // Finishes once what is queued for writing is written (at once if nothing is).
  void RequestFinish(const grpc::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_ || reactor_ == nullptr) return;
    finish_requested_ = true;
    finish_status_ = status;
    if (writing_) return;  // OnWritten finishes after the last write
    finished_ = true;
    reactor_->Finish(status);
  }

  WorkerServiceImpl* const service_;
  // Used by the pool task only (one at a time per stream).
  std::string worker_id_;            // set once the Hello is registered
  bool refused_ = false;             // the stream is finishing with an error: ignore what follows
  std::optional<std::string> held_;  // a message waiting for the appends in flight

  std::mutex mu_;
  WorkerServiceImpl::RawReactor* reactor_ ABSL_GUARDED_BY(mu_);
  grpc::CallbackServerContext* const ctx_;           // valid while reactor_ is
  grpc::ByteBuffer* const read_buffer_;              // the reactor's; filled by gRPC between reads
  std::deque<std::string> in_ ABSL_GUARDED_BY(mu_);  // read, not handled yet
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool scheduled_ ABSL_GUARDED_BY(mu_) = false;  // a Drain task is queued or running
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool read_done_ ABSL_GUARDED_BY(mu_) = false;            // no more messages will come
  bool ended_ ABSL_GUARDED_BY(mu_) = false;                // End() ran
  int appends_in_flight_ ABSL_GUARDED_BY(mu_) = 0;         // metric batches given to the store
  bool waiting_for_appends_ ABSL_GUARDED_BY(mu_) = false;  // Drain stopped until they are done
  std::deque<grpc::ByteBuffer> out_ ABSL_GUARDED_BY(mu_);  // front: being written
  size_t unsent_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // a write failed, or the worker does not read
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Finish was called
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

namespace {

// gRPC's reactor for one Connect call: forwards its reactions to the stream's core and deletes
// itself when gRPC is done with the call.
class WorkerStream : public WorkerServiceImpl::RawReactor {
 public:
  WorkerStream(WorkerServiceImpl* service, grpc::CallbackServerContext* ctx)
      : core_(std::make_shared<WorkerStreamCore>(service, this, ctx, &read_buffer_)) {
    core_->Start();
  }
  void OnReadDone(bool ok) override { core_->OnRead(ok); }
  void OnWriteDone(bool ok) override { core_->OnWritten(ok); }
  void OnCancel() override { core_->OnCancelled(); }
  void OnDone() override {
    core_->OnDone();
    delete this;
  }

 private:
  grpc::ByteBuffer read_buffer_;  // before core_, which points at it
  const std::shared_ptr<WorkerStreamCore> core_;
};

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(Dispatcher* dispatcher, const TokenAuth* auth,
                                     const Store* store, int stream_threads)
    : dispatcher_(dispatcher),
      auth_(auth),
      store_(store),
      pool_(std::make_unique<StreamPool>(stream_threads)) {}

WorkerServiceImpl::~WorkerServiceImpl() = default;

WorkerServiceImpl::RawReactor* WorkerServiceImpl::Connect(grpc::CallbackServerContext* ctx) {
  return new WorkerStream(this, ctx);
}

void WorkerServiceImpl::HandleUnparsable(const std::string& worker_id, const std::string& bytes,
                                         WorkerSession& session) {
  RawFacts facts = ReadRaw(bytes);
  for (const v1::CoordinatorMessage& r :
       dispatcher_->OnUnparsable(worker_id, facts.attempt_id, facts.fencing_token, facts.why)) {
    session.Send(r);
  }
}

void WorkerServiceImpl::Handle(const std::string& worker_id, const v1::WorkerMessage& msg,
                               WorkerSession& session) {
  std::vector<v1::CoordinatorMessage> replies;
  switch (msg.msg_case()) {
    case v1::WorkerMessage::kHeartbeat:
      dispatcher_->OnHeartbeat(worker_id);
      dispatcher_->OnDraining(worker_id, msg.heartbeat().draining());
      if (msg.heartbeat().has_datasets() &&
          !Dispatcher::CheckDatasets(msg.heartbeat().datasets().names()).ok()) {
        std::cerr << "ablate-coordinator: the dataset list of worker " << worker_id << " ignored: "
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
    case v1::WorkerMessage::kMetrics:
      replies = dispatcher_->OnMetrics(worker_id, msg.metrics());
      break;
    case v1::WorkerMessage::kRunFinished:
      replies = dispatcher_->OnRunFinished(worker_id, msg.run_finished());
      break;
    case v1::WorkerMessage::kNcclId:
      dispatcher_->OnNcclId(worker_id, msg.nccl_id());
      break;
    case v1::WorkerMessage::kRelease:
      dispatcher_->OnRelease(worker_id, msg.release());
      break;
    default:
      break;  // a second Hello is ignored
  }
  for (const v1::CoordinatorMessage& r : replies) session.Send(r);
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
