// The worker stream at scale (issue 28), against the real ablate-coordinator on a loopback port:
// many workers' streams at once hold no thread each, and every batch the coordinator
// acknowledged is stored exactly once, also when batches are pipelined and one is sent twice.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ablate/v1/client.grpc.pb.h"
#include "ablate/v1/worker.grpc.pb.h"
#include "tests/util/sqlite_query.h"
#include "tests/util/subprocess.h"

namespace ablate {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::QueryInt;
using testing::Subprocess;

constexpr int kWorkers = 96;
constexpr int kSteps = 20;

int ThreadsOf(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

v1::MetricPoint Point(int64_t step) {
  v1::MetricPoint p;
  p.set_step(step);
  p.set_train_loss(10.0 / static_cast<double>(step + 1));
  p.set_train_time_ms(static_cast<double>(step));
  return p;
}

// One simulated worker: Hello, its Assignment, kSteps batches sent without waiting plus batch 3
// again, the Acks up to kSteps, then the result. Returns what went wrong, or "".
std::string RunWorker(const std::string& address, int index, std::atomic<int>* connected) {
  auto stub =
      v1::WorkerService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 120s);
  auto stream = stub->Connect(&ctx);
  v1::WorkerMessage hello;
  hello.mutable_hello()->set_worker_id("w" + std::to_string(index));
  hello.mutable_hello()->set_host("test");
  hello.mutable_hello()->set_cpu_slots(1);
  hello.mutable_hello()->add_datasets("bench");
  if (!stream->Write(hello)) return "Hello not written";
  v1::CoordinatorMessage in;
  if (!stream->Read(&in) || !in.has_welcome()) return "no Welcome";
  ++*connected;
  while (stream->Read(&in) && !in.has_assignment()) {
  }
  if (!in.has_assignment()) return "no Assignment";
  const v1::Assignment a = in.assignment();
  v1::WorkerMessage m;
  m.mutable_run_started()->set_attempt_id(a.attempt_id());
  m.mutable_run_started()->set_fencing_token(a.fencing_token());
  stream->Write(m);
  for (int seq = 1; seq <= kSteps; ++seq) {
    m.Clear();
    v1::MetricBatch* b = m.mutable_metrics();
    b->set_attempt_id(a.attempt_id());
    b->set_fencing_token(a.fencing_token());
    b->set_seq(seq);
    *b->add_points() = Point(seq);
    if (!stream->Write(m)) return "batch not written";
    if (seq == 5) {  // batch 3 again, as a worker resends from its outbox: stored once
      b->set_seq(3);
      b->clear_points();
      *b->add_points() = Point(3);
      stream->Write(m);
    }
  }
  int64_t acked = 0;
  while (acked < kSteps && stream->Read(&in)) {
    if (in.has_cancel()) return "Cancel: " + in.cancel().reason();
    if (in.has_ack() && in.ack().attempt_id() == a.attempt_id()) {
      acked = std::max(acked, in.ack().seq());
    }
  }
  if (acked != kSteps) return "acknowledged up to " + std::to_string(acked);
  m.Clear();
  v1::RunFinished* f = m.mutable_run_finished();
  f->set_attempt_id(a.attempt_id());
  f->set_fencing_token(a.fencing_token());
  f->set_status("ok");
  f->set_last_batch_seq(kSteps);
  f->mutable_summary()->set_steps(kSteps);
  stream->Write(m);
  while (stream->Read(&in)) {
    if (in.has_ack() && in.ack().finished()) break;
  }
  if (!in.has_ack() || !in.ack().finished()) return "result not acknowledged";
  stream->WritesDone();
  while (stream->Read(&in)) {  // Acks of batches committed in one group may come in any order
  }
  grpc::Status s = stream->Finish();
  return s.ok() ? "" : "stream ended with " + s.error_message();
}

TEST(WorkerStreamTest, ManyStreamsHoldNoThreadEachAndEveryAcknowledgedPointIsStoredOnce) {
  testing::TempDir dir;
  Subprocess coordinator(
      {ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir", dir.path(), "--port-file",
       dir.path() + "/port", "--lease-ms", "60000", "--http", "off"},
      dir.path());
  for (int i = 0; i < 1500 && !fs::exists(dir.path() + "/port"); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  const std::string port = testing::ReadFile(dir.path() + "/port");
  ASSERT_FALSE(port.empty()) << coordinator.Stderr();
  const std::string address = "127.0.0.1:" + port.substr(0, port.find('\n'));
  const int idle_threads = ThreadsOf(coordinator.pid());

  std::atomic<int> connected{0};
  std::atomic<int> peak{0};
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      peak = std::max(peak.load(), ThreadsOf(coordinator.pid()));
      std::this_thread::sleep_for(10ms);
    }
  });
  std::vector<std::string> errors(kWorkers);
  std::vector<std::thread> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.emplace_back([&, i] { errors[i] = RunWorker(address, i, &connected); });
  }
  // Submitted once every worker is connected, so that each gets one run in the first pass.
  for (int i = 0; i < 3000 && connected.load() < kWorkers; ++i) std::this_thread::sleep_for(10ms);
  auto client =
      v1::AblateService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(
      "name: streams\nbaseline: {preset: r9-shortcuts, scale: tiny, set: "
      "{num_iterations: " +
      std::to_string(kSteps) + "}}\nseeds: " + std::to_string(kWorkers) +
      "\ngpus_per_run: 0\ndataset: bench\n"
      "max_attempts: 1\n");
  req.set_file_name("streams.yaml");
  v1::SubmitSweepResponse resp;
  grpc::ClientContext submit_ctx;
  grpc::Status submitted = client->SubmitSweep(&submit_ctx, req, &resp);
  EXPECT_TRUE(submitted.ok()) << submitted.error_message();

  for (std::thread& t : workers) t.join();
  done = true;
  sampler.join();
  for (int i = 0; i < kWorkers; ++i) EXPECT_EQ(errors[i], "") << "worker " << i;
  if (::testing::Test::HasFailure()) {
    const std::string log = coordinator.Stderr();
    std::cerr << "---- coordinator\n" << log.substr(log.size() > 8000 ? log.size() - 8000 : 0);
  }
  EXPECT_EQ(connected.load(), kWorkers);
  // One thread per stream would be more than kWorkers; the streams share a fixed pool.
  EXPECT_LT(peak.load(), kWorkers / 2 + idle_threads)
      << "coordinator threads: " << idle_threads << " idle, " << peak.load() << " at most with "
      << kWorkers << " streams";
  std::cerr << "coordinator threads: " << idle_threads << " idle, peak " << peak.load() << " with "
            << kWorkers << " streams\n";

  const std::string db = dir.path() + "/ablate.db";
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*) FROM metrics"), kWorkers * kSteps);
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*) FROM metric_batches"), kWorkers * kSteps);
  EXPECT_EQ(QueryInt(db,
                     "SELECT COUNT(*) FROM (SELECT attempt_id FROM metrics GROUP BY "
                     "attempt_id HAVING COUNT(*) = " +
                         std::to_string(kSteps) +
                         " AND COUNT(DISTINCT step) = " + std::to_string(kSteps) + ")"),
            kWorkers);
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*) FROM runs WHERE state = 'succeeded'"), kWorkers);
}

}  // namespace
}  // namespace ablate
