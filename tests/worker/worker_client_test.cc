// WorkerClient against an in-process fake coordinator on loopback: Hello, heartbeats, an
// assignment run by the fake trainer, and a coordinator restart after which every unacknowledged
// batch arrives again with the same seq.
#include "worker/worker_client.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "tests/util/subprocess.h"
#include "tests/worker/fake_trainer.h"

namespace ablate::worker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class FakeCoordinator final : public v1::WorkerService::Service {
 public:
  FakeCoordinator(bool assign, bool ack) : assign_(assign), ack_(ack) {}

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream)
      override {
    v1::WorkerMessage first;
    if (!stream->Read(&first) || !first.has_hello()) return grpc::Status::CANCELLED;
    Record(first, context);
    v1::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_heartbeat_interval_ms(50);
    welcome.mutable_welcome()->set_lease_ms(5000);
    stream->Write(welcome);
    if (assign_) {
      v1::CoordinatorMessage m;
      v1::Assignment* a = m.mutable_assignment();
      a->set_run_id(1);
      a->set_attempt_id(11);
      a->set_fencing_token(5);
      a->set_dataset("ds");
      a->set_config_json(R"({"fake":{"steps":6,"val_every":0}})");
      stream->Write(m);
    }
    for (v1::WorkerMessage m; stream->Read(&m);) {
      Record(m, context);
      if (ack_ && (m.has_metrics() || m.has_run_finished())) {
        v1::CoordinatorMessage ack;
        ack.mutable_ack()->set_attempt_id(11);
        ack.mutable_ack()->set_seq(m.has_metrics() ? m.metrics().seq() : INT64_MAX);
        stream->Write(ack);
      }
    }
    return grpc::Status::OK;
  }

  std::vector<v1::WorkerMessage> Received() {
    absl::MutexLock l(&mu_);
    return received_;
  }
  std::string token() {
    absl::MutexLock l(&mu_);
    return token_;
  }
  bool WaitFor(const std::function<bool(const v1::WorkerMessage&)>& pred, milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      for (const auto& m : Received()) {
        if (pred(m)) return true;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

 private:
  void Record(const v1::WorkerMessage& m, grpc::ServerContext* context) {
    absl::MutexLock l(&mu_);
    received_.push_back(m);
    auto it = context->client_metadata().find("authorization");
    if (it != context->client_metadata().end()) token_ = std::string(it->second.data(), it->second.size());
  }
  const bool assign_, ack_;
  absl::Mutex mu_;
  std::vector<v1::WorkerMessage> received_;
  std::string token_;
};

std::unique_ptr<grpc::Server> Serve(FakeCoordinator* service, const std::string& address,
                                    int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

std::vector<int64_t> BatchSeqs(const std::vector<v1::WorkerMessage>& ms) {
  std::vector<int64_t> seqs;
  for (const auto& m : ms) {
    if (m.has_metrics()) seqs.push_back(m.metrics().seq());
  }
  return seqs;
}

TEST(WorkerClientTest, HelloHeartbeatsAssignmentAndResendAfterCoordinatorRestart) {
  ablate::testing::TempDir dir;
  WorkerCoreOptions core_options;
  core_options.work_dir = dir.path() + "/work";
  core_options.data_dir = dir.path() + "/data";
  core_options.trainer_path = ablate::worker::testing::WriteFakeTrainer(dir.path());
  core_options.batcher = {.max_points = 2, .max_age_ms = 50};
  core_options.tick = milliseconds(20);

  FakeCoordinator first(/*assign=*/true, /*ack=*/false);
  int port = 0;
  auto server = Serve(&first, "127.0.0.1:0", &port);
  ASSERT_GT(port, 0);

  WorkerCore* core_ptr = nullptr;
  WorkerClientOptions options;
  options.coordinator = "127.0.0.1:" + std::to_string(port);
  options.token = "s3cret";
  options.make_hello = [&] {
    v1::Hello h;
    h.set_worker_id("w1");
    h.set_cpu_slots(2);
    h.add_datasets("ds");
    for (const auto& held : core_ptr->Held()) *h.add_running() = held;
    return h;
  };
  WorkerClient client(options);
  auto core = WorkerCore::Create(core_options, &client);
  ASSERT_TRUE(core.ok());
  core_ptr = core->get();
  client.SetCore(core_ptr);
  std::thread runner([&] { client.Run(); });

  auto finished = [](const v1::WorkerMessage& m) { return m.has_run_finished(); };
  ASSERT_TRUE(first.WaitFor(finished, seconds(20)));
  EXPECT_TRUE(first.WaitFor([](const auto& m) { return m.has_heartbeat(); }, seconds(5)));
  std::vector<v1::WorkerMessage> got = first.Received();
  EXPECT_EQ(got[0].hello().worker_id(), "w1");
  EXPECT_EQ(got[0].hello().cpu_slots(), 2);
  EXPECT_EQ(first.token(), "Bearer s3cret");
  EXPECT_TRUE(first.WaitFor([](const auto& m) { return m.has_run_started(); }, seconds(1)));
  std::vector<int64_t> seqs = BatchSeqs(got);
  ASSERT_FALSE(seqs.empty());

  // The coordinator dies without acknowledging anything and comes back on the same port.
  server->Shutdown(std::chrono::system_clock::now() + milliseconds(100));
  server->Wait();
  FakeCoordinator second(/*assign=*/false, /*ack=*/true);
  int port2 = 0;
  auto server2 = Serve(&second, "127.0.0.1:" + std::to_string(port), &port2);
  ASSERT_EQ(port2, port);
  ASSERT_TRUE(second.WaitFor(finished, seconds(20)));
  EXPECT_EQ(BatchSeqs(second.Received()), seqs);  // same batches, same seqs, same order
  EXPECT_EQ(second.Received()[0].hello().running_size(), 0);  // the trainer already finished

  // Everything is acknowledged now: the outbox is empty.
  auto deadline = std::chrono::steady_clock::now() + seconds(5);
  while (std::filesystem::exists(core_options.work_dir + "/outbox/11.outbox") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_FALSE(std::filesystem::exists(core_options.work_dir + "/outbox/11.outbox"));

  (*core)->Shutdown();
  client.Stop();
  runner.join();
  server2->Shutdown(std::chrono::system_clock::now() + milliseconds(100));
}

}  // namespace
}  // namespace ablate::worker
