// The gRPC adapter: holds WorkerService.Connect to the coordinator, says Hello, heartbeats, hands
// coordinator messages to the WorkerCore and carries its messages back; reconnects forever with
// jittered exponential backoff when the coordinator goes away.
#ifndef ABLATE_WORKER_WORKER_CLIENT_H_
#define ABLATE_WORKER_WORKER_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ablate/v1/worker.grpc.pb.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "worker/worker_core.h"

namespace ablate::worker {

struct WorkerClientOptions {
  std::string coordinator;  // HOST:PORT
  std::string token;        // worker token, sent as `authorization: Bearer <token>`; "" for none
  std::string tls_ca_pem;   // PEM roots to verify a TLS coordinator; "" = plaintext
  // Builds the Hello for each connection (datasets and held attempts may have changed).
  std::function<v1::Hello()> make_hello;
  // Heartbeat period; 0 uses Welcome.heartbeat_interval_ms (1000 when that is 0 too).
  int64_t heartbeat_ms = 0;
  // The valid datasets now, sorted (the same list make_hello puts in the Hello). When set, it is
  // called at most once per dataset_rescan, and a change rides on the next heartbeat, so a fetch
  // that finishes while connected is scheduled on without a reconnect.
  std::function<std::vector<std::string>()> list_datasets;
  std::chrono::milliseconds dataset_rescan{10000};
  // True while the worker takes no new runs; every heartbeat then says so (Heartbeat.draining).
  std::function<bool()> draining;
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{10000};
  const Clock* clock = &SystemClock::Get();  // WallMs stamps heartbeats; not owned
};

// Thread-safe. Run() occupies the calling thread until Stop().
class WorkerClient : public MessageSink {
 public:
  explicit WorkerClient(WorkerClientOptions options);
  // Must be called before Run(); `core` outlives the client's Run().
  void SetCore(WorkerCore* core) { core_ = core; }
  void Run();
  void Stop();

  // A code snapshot by hash (WorkerService.GetSnapshot), for script runs. Thread-safe; blocks
  // up to a minute. The coordinator's error codes (NOT_FOUND, UNAVAILABLE, ...).
  absl::StatusOr<Snapshot> FetchSnapshot(const std::string& hash);

  uint64_t Generation() override;
  bool Send(const v1::WorkerMessage& message, uint64_t generation) override;

 private:
  using Stream = grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>;
  // One connection; true when it got as far as Welcome.
  bool Session();
  bool Greet(Stream& stream, v1::Welcome* welcome);
  void ReadLoop(Stream& stream);
  void Dispatch(const v1::CoordinatorMessage& message);
  void Heartbeats(uint64_t generation, std::chrono::milliseconds period);
  void Backoff(std::chrono::milliseconds delay);

  const WorkerClientOptions options_;
  WorkerCore* core_ = nullptr;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  std::mt19937_64 rng_{std::random_device{}()};

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;

  absl::Mutex write_mu_ ABSL_ACQUIRED_AFTER(mu_);  // one writer at a time on the stream
  Stream* stream_ ABSL_GUARDED_BY(write_mu_) = nullptr;
  uint64_t generation_ ABSL_GUARDED_BY(write_mu_) = 0;  // 0: no usable stream
  uint64_t last_generation_ ABSL_GUARDED_BY(write_mu_) = 0;
  // Datasets the coordinator last heard of on this connection (Hello, then heartbeats).
  std::vector<std::string> advertised_ ABSL_GUARDED_BY(write_mu_);
};

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_WORKER_CLIENT_H_
