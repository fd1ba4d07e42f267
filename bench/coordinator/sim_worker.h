// A simulated worker daemon: one WorkerService.Connect stream speaking the real protocol
// (Hello -> Welcome, Heartbeats, Assignments, RunStarted, MetricBatches -> Acks, RunFinished ->
// Ack{finished}) with no trainer behind it. Records each batch's send -> Ack latency.
//
// Thread-safe: any number of threads may send and wait on one SimWorker (writes are serialised);
// a reader thread receives, a heartbeat thread beats at the Welcome's interval.
#ifndef ABLATE_BENCH_COORDINATOR_SIM_WORKER_H_
#define ABLATE_BENCH_COORDINATOR_SIM_WORKER_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ablate/v1/worker.grpc.pb.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ablate::bench {

using Clock = std::chrono::steady_clock;

struct ReceivedAssignment {
  v1::Assignment assignment;
  Clock::time_point arrived;  // when the reader thread got it off the stream
};

class SimWorker {
 public:
  SimWorker(std::shared_ptr<grpc::Channel> channel, std::string worker_id, int cpu_slots);
  ~SimWorker();  // Close()
  SimWorker(const SimWorker&) = delete;
  SimWorker& operator=(const SimWorker&) = delete;

  // Hello -> Welcome, then starts the reader and heartbeat threads. False (printed) on failure.
  bool Connect();
  // Ends the stream (WritesDone) and joins the threads. Idempotent.
  void Close();

  // The next Assignment not yet taken; nullopt after `timeout` or once the stream ended.
  std::optional<ReceivedAssignment> NextAssignment(std::chrono::milliseconds timeout);

  void SendRunStarted(const v1::Assignment& a);
  // Sends `batch` (attempt, token and seq must be set) and starts its latency clock.
  void SendBatch(const v1::MetricBatch& batch);
  // Waits until every batch of the attempt with seq <= `seq` is acknowledged.
  bool WaitAcked(int64_t attempt_id, int64_t seq, std::chrono::milliseconds timeout);
  // RunFinished (status "ok") and waits for its Ack with finished = true.
  bool Finish(const v1::Assignment& a, int64_t steps, std::chrono::milliseconds timeout);

  // Send -> Ack latencies (ms) recorded so far, cleared.
  std::vector<double> TakeLatenciesMs();
  // When each of those latencies ended (its Ack arrived), in the same order, cleared.
  std::vector<Clock::time_point> TakeAckTimes();
  // When the last Ack that acknowledged a batch arrived (the epoch when none did).
  Clock::time_point LastBatchAck() const;
  // Cancels received so far. The coordinator acknowledges the batches it refuses together with a
  // Cancel, so an acknowledged batch of a cancelled attempt was not stored: a bench counts an
  // attempt's work as done only when it has no Cancel.
  int cancels() const;
  // "Cancel of attempt A: reason" for the first Cancel received, "" when none.
  std::string FirstCancel() const;
  // Whether attempt `attempt_id` got a Cancel.
  bool Cancelled(int64_t attempt_id) const;

 private:
  struct AttemptAcks {
    int64_t acked_seq = 0;
    bool finished = false;
    std::map<int64_t, Clock::time_point> in_flight;  // seq -> send time
  };


  bool Write(const v1::WorkerMessage& msg);
  void ReadLoop();
  void HeartbeatLoop();
  void OnAck(const v1::Ack& ack, Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string worker_id_;
  const int cpu_slots_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  absl::Mutex write_mu_;  // one writer at a time on the stream

  // Waiters wait on mu_ itself (Mutex::AwaitWithTimeout): every change is made under it.
  mutable absl::Mutex mu_;
  std::deque<ReceivedAssignment> assignments_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, AttemptAcks> acks_ ABSL_GUARDED_BY(mu_);  // by attempt id
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  std::vector<Clock::time_point> ack_times_ ABSL_GUARDED_BY(mu_);  // one per latency
  Clock::time_point last_batch_ack_ ABSL_GUARDED_BY(mu_){};
  int cancels_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_cancel_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> cancelled_ ABSL_GUARDED_BY(mu_);  // attempt ids
  bool stream_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t heartbeat_ms_ = 1000;

  std::thread reader_;
  std::thread heartbeat_;
  bool closed_ = false;
};

// One step point with every field a trainer reports.
v1::MetricPoint BenchPoint(int64_t step);

}  // namespace ablate::bench

#endif  // ABLATE_BENCH_COORDINATOR_SIM_WORKER_H_
