// Connect-stream lifecycle: Hello -> Welcome -> (heartbeats | coordinator messages) until the
// stream breaks, then backoff and again.
#include "worker/worker_client.h"

#include <algorithm>
#include <optional>
#include <thread>

namespace ablate::worker {
namespace {

constexpr int64_t kDefaultHeartbeatMs = 1000;

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target,
                                          const std::string& tls_ca_pem) {
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff (1 s growing to 120 s by default) would keep a restarted
  // coordinator unreachable long after it is back; keep it within our own schedule.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 10000);
  // Notice a coordinator host that vanished without closing the connection.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetMaxReceiveMessageSize(64 << 20);
  if (tls_ca_pem.empty()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls_ca_pem;
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

}  // namespace

WorkerClient::WorkerClient(WorkerClientOptions options)
    : options_(std::move(options)),
      channel_(MakeChannel(options_.coordinator, options_.tls_ca_pem)),
      stub_(v1::WorkerService::NewStub(channel_)) {}

void WorkerClient::Run() {
  std::chrono::milliseconds delay = options_.backoff_initial;
  for (int attempt = 1;; ++attempt) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (Session()) delay = options_.backoff_initial, attempt = 1;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    // Full jitter in [delay/2, delay]: many workers losing one coordinator do not return in step.
    std::uniform_int_distribution<int64_t> jitter(delay.count() / 2, delay.count());
    std::chrono::milliseconds wait(jitter(rng_));
    LogLine("reconnecting to " + options_.coordinator + " in " + std::to_string(wait.count()) +
            " ms (attempt " + std::to_string(attempt) + ")");
    Backoff(wait);
    delay = std::min(delay * 2, options_.backoff_max);
  }
}

void WorkerClient::Backoff(std::chrono::milliseconds delay) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::FromChrono(delay));
}

void WorkerClient::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

bool WorkerClient::Session() {
  grpc::ClientContext context;
  if (!options_.token.empty()) context.AddMetadata("authorization", "Bearer " + options_.token);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    context_ = &context;
  }
  std::unique_ptr<Stream> stream = stub_->Connect(&context);
  v1::Welcome welcome;
  bool welcomed = Greet(*stream, &welcome);
  if (welcomed) {
    int64_t ms = options_.heartbeat_ms > 0            ? options_.heartbeat_ms
                 : welcome.heartbeat_interval_ms() > 0 ? welcome.heartbeat_interval_ms()
                                                       : kDefaultHeartbeatMs;
    uint64_t generation;
    {
      absl::MutexLock lock(&write_mu_);
      stream_ = stream.get();
      generation = generation_ = ++last_generation_;
    }
    LogLine("connected to " + options_.coordinator + " (heartbeat every " + std::to_string(ms) +
            " ms, lease " + std::to_string(welcome.lease_ms()) + " ms)");
    core_->HandleStale({welcome.stale_attempt_ids().begin(), welcome.stale_attempt_ids().end()});
    std::thread heartbeats([&] { Heartbeats(generation, std::chrono::milliseconds(ms)); });
    core_->SendPending();
    ReadLoop(*stream);
    {
      absl::MutexLock lock(&write_mu_);
      stream_ = nullptr;
      generation_ = 0;
    }
    heartbeats.join();
  }
  grpc::Status status = stream->Finish();
  {
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
  }
  LogLine("stream to " + options_.coordinator + " ended: " +
          (status.ok() ? std::string("OK") : status.error_message()) + " (code " +
          std::to_string(int(status.error_code())) + ")");
  return welcomed;
}

bool WorkerClient::Greet(Stream& stream, v1::Welcome* welcome) {
  v1::WorkerMessage hello;
  *hello.mutable_hello() = options_.make_hello();
  {
    absl::MutexLock lock(&write_mu_);
    advertised_.assign(hello.hello().datasets().begin(), hello.hello().datasets().end());
  }
  if (!stream.Write(hello)) return false;
  v1::CoordinatorMessage reply;
  if (!stream.Read(&reply)) return false;
  if (!reply.has_welcome()) {
    LogLine("coordinator answered Hello without a Welcome; closing the stream");
    stream.WritesDone();
    absl::MutexLock lock(&mu_);
    if (context_ != nullptr) context_->TryCancel();
    return false;
  }
  *welcome = reply.welcome();
  return true;
}

void WorkerClient::ReadLoop(Stream& stream) {
  v1::CoordinatorMessage message;
  while (stream.Read(&message)) Dispatch(message);
}

void WorkerClient::Dispatch(const v1::CoordinatorMessage& m) {
  switch (m.msg_case()) {
    case v1::CoordinatorMessage::kAssignment: core_->HandleAssignment(m.assignment()); break;
    case v1::CoordinatorMessage::kAck: core_->HandleAck(m.ack()); break;
    case v1::CoordinatorMessage::kCancel: core_->HandleCancel(m.cancel()); break;
    case v1::CoordinatorMessage::kWelcome:
      core_->HandleStale({m.welcome().stale_attempt_ids().begin(),
                          m.welcome().stale_attempt_ids().end()});
      break;
    case v1::CoordinatorMessage::kNcclId: core_->HandleNcclId(m.nccl_id()); break;
    case v1::CoordinatorMessage::MSG_NOT_SET: break;
  }
}

void WorkerClient::Heartbeats(uint64_t generation, std::chrono::milliseconds period) {
  auto next_scan = std::chrono::steady_clock::now() + options_.dataset_rescan;
  while (true) {
    v1::WorkerMessage beat;
    beat.mutable_heartbeat()->set_time_ms(options_.clock->WallMs());
    if (options_.draining && options_.draining()) beat.mutable_heartbeat()->set_draining(true);
    std::optional<std::vector<std::string>> changed;
    if (options_.list_datasets && std::chrono::steady_clock::now() >= next_scan) {
      next_scan = std::chrono::steady_clock::now() + options_.dataset_rescan;
      std::vector<std::string> now = options_.list_datasets();
      absl::MutexLock lock(&write_mu_);
      if (now != advertised_) changed = std::move(now);
    }
    if (changed) {
      for (const std::string& d : *changed) beat.mutable_heartbeat()->mutable_datasets()->add_names(d);
    }
    if (!Send(beat, generation)) return;
    if (changed) {
      std::string names;
      for (const std::string& d : *changed) names += (names.empty() ? "" : ", ") + d;
      LogLine("datasets changed; now advertising: " + (names.empty() ? "none" : names));
      absl::MutexLock lock(&write_mu_);
      advertised_ = std::move(*changed);
    }
    absl::MutexLock lock(&write_mu_);
    auto gone = [this, generation]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) {
      return generation_ != generation;
    };
    if (write_mu_.AwaitWithTimeout(absl::Condition(&gone), absl::FromChrono(period))) return;
  }
}

uint64_t WorkerClient::Generation() {
  absl::MutexLock lock(&write_mu_);
  return generation_;
}

bool WorkerClient::Send(const v1::WorkerMessage& message, uint64_t generation) {
  absl::MutexLock lock(&write_mu_);
  if (generation == 0 || generation != generation_ || stream_ == nullptr) return false;
  return stream_->Write(message);
}

absl::StatusOr<Snapshot> WorkerClient::FetchSnapshot(const std::string& hash) {
  grpc::ClientContext context;
  if (!options_.token.empty()) context.AddMetadata("authorization", "Bearer " + options_.token);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(1));
  v1::GetSnapshotRequest req;
  req.set_hash(hash);
  v1::CodeSnapshot resp;
  grpc::Status s = stub_->GetSnapshot(&context, req, &resp);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        "fetching from the coordinator: " + s.error_message());
  }
  Snapshot files;
  for (const v1::SnapshotFile& f : resp.files()) {
    files.push_back({f.path(), f.content(), f.executable()});
  }
  return files;
}

}  // namespace ablate::worker
