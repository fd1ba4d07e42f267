// SimWorker: the worker protocol without a trainer.
#include "bench/coordinator/sim_worker.h"

#include <algorithm>
#include <iostream>
#include <utility>

#include "absl/time/time.h"

namespace ablate::bench {

SimWorker::SimWorker(std::shared_ptr<grpc::Channel> channel, std::string worker_id, int cpu_slots)
    : worker_id_(std::move(worker_id)),
      cpu_slots_(cpu_slots),
      stub_(v1::WorkerService::NewStub(channel)) {}

SimWorker::~SimWorker() { Close(); }

bool SimWorker::Connect() {
  stream_ = stub_->Connect(&ctx_);
  v1::WorkerMessage hello;
  hello.mutable_hello()->set_worker_id(worker_id_);
  hello.mutable_hello()->set_host("bench");
  hello.mutable_hello()->set_cpu_slots(cpu_slots_);
  hello.mutable_hello()->set_trainer_version("bench");
  hello.mutable_hello()->add_datasets("bench");
  v1::CoordinatorMessage reply;
  if (!stream_->Write(hello) || !stream_->Read(&reply) || !reply.has_welcome()) {
    std::cerr << worker_id_ << ": no Welcome: " << stream_->Finish().error_message() << "\n";
    stream_.reset();
    return false;
  }
  heartbeat_ms_ = reply.welcome().heartbeat_interval_ms();
  reader_ = std::thread([this] { ReadLoop(); });
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  return true;
}

void SimWorker::Close() {
  if (closed_ || !stream_) return;
  closed_ = true;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  heartbeat_.join();
  {
    absl::MutexLock lock(&write_mu_);
    stream_->WritesDone();
  }
  reader_.join();  // the coordinator ends the stream after our WritesDone
  stream_->Finish();
}

bool SimWorker::Write(const v1::WorkerMessage& msg) {
  absl::MutexLock lock(&write_mu_);
  return stream_->Write(msg);
}

void SimWorker::ReadLoop() {
  v1::CoordinatorMessage msg;
  while (stream_->Read(&msg)) {
    Clock::time_point now = Clock::now();
    absl::MutexLock lock(&mu_);
    if (msg.has_assignment()) {
      assignments_.push_back({msg.assignment(), now});
    } else if (msg.has_ack()) {
      OnAck(msg.ack(), now);
    } else if (msg.has_cancel()) {
      ++cancels_;
      cancelled_.insert(msg.cancel().attempt_id());
      if (first_cancel_.empty()) {
        first_cancel_ = worker_id_ + ": Cancel of attempt " +
                        std::to_string(msg.cancel().attempt_id()) + ": " + msg.cancel().reason();
      }
      std::cerr << worker_id_ << ": Cancel of attempt " << msg.cancel().attempt_id() << ": "
                << msg.cancel().reason() << "\n";
    }
  }
  absl::MutexLock lock(&mu_);
  stream_ended_ = true;
}

void SimWorker::OnAck(const v1::Ack& ack, Clock::time_point now) {
  AttemptAcks& a = acks_[ack.attempt_id()];
  if (ack.finished()) {
    a.finished = true;
    return;
  }
  a.acked_seq = std::max(a.acked_seq, ack.seq());
  auto end = a.in_flight.upper_bound(ack.seq());
  if (a.in_flight.begin() != end) last_batch_ack_ = now;
  for (auto it = a.in_flight.begin(); it != end; ++it) {
    latencies_ms_.push_back(std::chrono::duration<double, std::milli>(now - it->second).count());
    ack_times_.push_back(now);
  }
  a.in_flight.erase(a.in_flight.begin(), end);
}

void SimWorker::HeartbeatLoop() {
  auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Milliseconds(heartbeat_ms_))) {
        return;
      }
    }
    v1::WorkerMessage hb;
    hb.mutable_heartbeat()->set_time_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count());
    Write(hb);
  }
}

std::optional<ReceivedAssignment> SimWorker::NextAssignment(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !assignments_.empty() || stream_ended_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), absl::FromChrono(timeout));
  if (assignments_.empty()) return std::nullopt;
  ReceivedAssignment a = std::move(assignments_.front());
  assignments_.pop_front();
  return a;
}

void SimWorker::SendRunStarted(const v1::Assignment& a) {
  v1::WorkerMessage m;
  m.mutable_run_started()->set_attempt_id(a.attempt_id());
  m.mutable_run_started()->set_fencing_token(a.fencing_token());
  Write(m);
}

void SimWorker::SendBatch(const v1::MetricBatch& batch) {
  v1::WorkerMessage m;
  *m.mutable_metrics() = batch;
  {
    absl::MutexLock lock(&mu_);
    acks_[batch.attempt_id()].in_flight[batch.seq()] = Clock::now();
  }
  Write(m);
}

bool SimWorker::WaitAcked(int64_t attempt_id, int64_t seq, std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  auto acked = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return acks_[attempt_id].acked_seq >= seq || stream_ended_;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&acked), absl::FromChrono(timeout)) &&
         !stream_ended_;
}

bool SimWorker::Finish(const v1::Assignment& a, int64_t steps, std::chrono::milliseconds timeout) {
  v1::WorkerMessage m;
  v1::RunFinished* f = m.mutable_run_finished();
  f->set_attempt_id(a.attempt_id());
  f->set_fencing_token(a.fencing_token());
  f->set_status("ok");
  f->mutable_summary()->set_steps(steps);
  f->mutable_summary()->set_final_val_loss(3.5);
  f->mutable_summary()->set_mean_step_ms(1.0);
  f->mutable_summary()->set_train_time_ms(static_cast<double>(steps));
  Write(m);
  absl::MutexLock lock(&mu_);
  auto finished = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return acks_[a.attempt_id()].finished || stream_ended_;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&finished), absl::FromChrono(timeout)) &&
         !stream_ended_;
}

Clock::time_point SimWorker::LastBatchAck() const {
  absl::MutexLock lock(&mu_);
  return last_batch_ack_;
}

std::vector<double> SimWorker::TakeLatenciesMs() {
  absl::MutexLock lock(&mu_);
  return std::exchange(latencies_ms_, {});
}

std::vector<Clock::time_point> SimWorker::TakeAckTimes() {
  absl::MutexLock lock(&mu_);
  return std::exchange(ack_times_, {});
}

int SimWorker::cancels() const {
  absl::MutexLock lock(&mu_);
  return cancels_;
}

std::string SimWorker::FirstCancel() const {
  absl::MutexLock lock(&mu_);
  return first_cancel_;
}

bool SimWorker::Cancelled(int64_t attempt_id) const {
  absl::MutexLock lock(&mu_);
  return cancelled_.count(attempt_id) > 0;
}

v1::MetricPoint BenchPoint(int64_t step) {
  v1::MetricPoint p;
  p.set_step(step);
  p.set_train_loss(10.0 / (1.0 + 0.001 * static_cast<double>(step)));
  p.set_lr(0.02);
  p.set_step_ms(1.25);
  p.set_train_time_ms(1.25 * static_cast<double>(step));
  p.set_tokens(8192 * step);
  return p;
}

}  // namespace ablate::bench
