// WatchSweep and WatchRun at scale (issue 28), against the real ablate-coordinator on a loopback
// port: many watch streams at once hold no thread each, and every stream still ends as the
// synchronous handlers' did: on the token check, on the client's cancel or deadline, once its
// sweep or run finished (after an update saying so), and with UNAVAILABLE at shutdown.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ablate/v1/client.grpc.pb.h"
#include "tests/util/subprocess.h"

namespace ablate {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::Subprocess;

constexpr int kSweepWatchers = 96;
constexpr int kRunWatchers = 32;
constexpr int kRuns = 4;
const char* const kToken = "s3cret";

int ThreadsOf(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// The coordinator, with a client token and a sweep of kRuns queued runs (no worker: they stay
// queued until the test cancels the sweep).
class WatchStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(dir_.path() + "/client.token", std::string(kToken) + "\n");
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                                 dir_.path(), "--port-file", dir_.path() + "/port",
                                 "--client-token-file", dir_.path() + "/client.token", "--http",
                                 "off"},
        dir_.path());
    for (int i = 0; i < 1500 && !fs::exists(dir_.path() + "/port"); ++i) {
      std::this_thread::sleep_for(20ms);
    }
    const std::string port = testing::ReadFile(dir_.path() + "/port");
    ASSERT_FALSE(port.empty()) << coordinator_->Stderr();
    channel_ = grpc::CreateChannel("127.0.0.1:" + port.substr(0, port.find('\n')),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::AblateService::NewStub(channel_);
    v1::SubmitSweepRequest req;
    req.set_spec_yaml(
        "name: watched\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: " +
        std::to_string(kRuns) + "\ngpus_per_run: 0\nmax_attempts: 1\n");
    req.set_file_name("watched.yaml");
    v1::SubmitSweepResponse resp;
    auto ctx = Context();
    grpc::Status s = stub_->SubmitSweep(ctx.get(), req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    sweep_id_ = resp.sweep().id();
    ASSERT_EQ(resp.runs_size(), kRuns);
    for (const v1::Run& r : resp.runs()) run_ids_.push_back(r.id());
  }

  std::unique_ptr<grpc::ClientContext> Context(const std::string& token = kToken) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
    ctx->set_deadline(std::chrono::system_clock::now() + 60s);
    return ctx;
  }

  testing::TempDir dir_;
  std::unique_ptr<Subprocess> coordinator_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AblateService::Stub> stub_;
  int64_t sweep_id_ = 0;
  std::vector<int64_t> run_ids_;
};

// What one watch stream saw.
struct Seen {
  int updates = 0;
  bool first_complete = false;  // the first update named the sweep and all its runs (or the run)
  std::string last_state;       // of the sweep or run, in the last update
  grpc::Status status;
};

template <class Update>
void ReadAll(grpc::ClientReader<Update>* reader, Seen* seen, std::atomic<int>* first) {
  Update u;
  while (reader->Read(&u)) {
    if (seen->updates++ == 0) {
      if constexpr (std::is_same_v<Update, v1::SweepUpdate>) {
        seen->first_complete = u.runs_size() == kRuns && u.sweep().counts().total() == kRuns;
      } else {
        seen->first_complete = u.run().id() != 0;
      }
      ++*first;
    }
    if constexpr (std::is_same_v<Update, v1::SweepUpdate>) {
      seen->last_state = v1::SweepState_Name(u.sweep().state());
    } else {
      seen->last_state = v1::RunState_Name(u.run().state());
    }
  }
  seen->status = reader->Finish();
}

TEST_F(WatchStreamTest, ManyStreamsHoldNoThreadEachAndEndAsBefore) {
  const int idle_threads = ThreadsOf(coordinator_->pid());
  constexpr int kCancelled = 16;  // of the sweep watchers, cancelled by the client
  const int total = kSweepWatchers + kRunWatchers;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  for (int i = 0; i < total; ++i) contexts.push_back(Context());
  std::vector<Seen> seen(total);
  std::atomic<int> first{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < total; ++i) {
    readers.emplace_back([&, i] {
      if (i < kSweepWatchers) {
        v1::WatchSweepRequest req;
        req.set_id(sweep_id_);
        ReadAll(stub_->WatchSweep(contexts[i].get(), req).get(), &seen[i], &first);
      } else {
        v1::WatchRunRequest req;
        req.set_id(run_ids_[i % kRuns]);
        ReadAll(stub_->WatchRun(contexts[i].get(), req).get(), &seen[i], &first);
      }
    });
  }
  for (int i = 0; i < 3000 && first.load() < total; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(first.load(), total) << "every stream gets its first update at once";
  // Let the streams park and wake a few times (a change each: the feed moves on the submits).
  std::this_thread::sleep_for(600ms);
  const int open_threads = ThreadsOf(coordinator_->pid());
  // A thread per stream would be more than `total`; the streams share a timer and a small pool.
  EXPECT_LT(open_threads, idle_threads + 16)
      << "coordinator threads: " << idle_threads << " idle, " << open_threads << " with " << total
      << " watch streams open";
  std::cerr << "coordinator threads: " << idle_threads << " idle, " << open_threads << " with "
            << total << " watch streams open\n";

  // A stream without the token ends at once, UNAUTHENTICATED.
  {
    auto ctx = Context("");
    v1::WatchSweepRequest req;
    req.set_id(sweep_id_);
    Seen none;
    std::atomic<int> unused{0};
    ReadAll(stub_->WatchSweep(ctx.get(), req).get(), &none, &unused);
    EXPECT_EQ(none.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(none.updates, 0);
  }
  // A stream whose deadline passes ends DEADLINE_EXCEEDED, also while it is parked.
  {
    auto ctx = Context();
    ctx->set_deadline(std::chrono::system_clock::now() + 700ms);
    v1::WatchRunRequest req;
    req.set_id(run_ids_[0]);
    Seen timed;
    std::atomic<int> unused{0};
    const auto start = std::chrono::steady_clock::now();
    ReadAll(stub_->WatchRun(ctx.get(), req).get(), &timed, &unused);
    EXPECT_EQ(timed.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_EQ(timed.updates, 1);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  }
  // Streams the client cancels end CANCELLED; the others go on.
  for (int i = 0; i < kCancelled; ++i) contexts[i]->TryCancel();
  for (int i = 0; i < kCancelled; ++i) readers[i].join();
  for (int i = 0; i < kCancelled; ++i) {
    EXPECT_EQ(seen[i].status.error_code(), grpc::StatusCode::CANCELLED) << "stream " << i;
  }

  // Cancelling the sweep finishes it and its runs: every other stream gets an update saying so,
  // then ends OK.
  v1::CancelSweepRequest cancel;
  cancel.set_id(sweep_id_);
  v1::Sweep cancelled;
  auto ctx = Context();
  ASSERT_TRUE(stub_->CancelSweep(ctx.get(), cancel, &cancelled).ok());
  for (int i = kCancelled; i < total; ++i) readers[i].join();
  for (int i = kCancelled; i < total; ++i) {
    EXPECT_TRUE(seen[i].status.ok()) << "stream " << i << ": " << seen[i].status.error_message();
    EXPECT_TRUE(seen[i].first_complete) << "stream " << i;
    EXPECT_EQ(seen[i].last_state,
              i < kSweepWatchers ? "SWEEP_CANCELLED" : "RUN_CANCELLED")
        << "stream " << i;
  }
}

TEST_F(WatchStreamTest, StreamsEndUnavailableWhenTheCoordinatorStops) {
  constexpr int kStreams = 8;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  for (int i = 0; i < kStreams; ++i) contexts.push_back(Context());
  std::vector<Seen> seen(kStreams);
  std::atomic<int> first{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < kStreams; ++i) {
    readers.emplace_back([&, i] {
      v1::WatchSweepRequest req;
      req.set_id(sweep_id_);
      ReadAll(stub_->WatchSweep(contexts[i].get(), req).get(), &seen[i], &first);
    });
  }
  for (int i = 0; i < 3000 && first.load() < kStreams; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(first.load(), kStreams);
  std::this_thread::sleep_for(300ms);  // parked
  const auto stop = std::chrono::steady_clock::now();
  coordinator_->Signal(SIGTERM);
  for (std::thread& t : readers) t.join();
  std::cerr << "streams ended " << (std::chrono::steady_clock::now() - stop) / 1ms
            << " ms after SIGTERM\n";
  for (int i = 0; i < kStreams; ++i) {
    EXPECT_EQ(seen[i].status.error_code(), grpc::StatusCode::UNAVAILABLE) << "stream " << i;
    EXPECT_EQ(seen[i].status.error_message(), "shutting down") << "stream " << i;
  }
  std::optional<testing::ProcessResult> exit = coordinator_->Wait(10s);
  ASSERT_TRUE(exit.has_value()) << "the coordinator did not stop";
  std::cerr << "coordinator exited " << (std::chrono::steady_clock::now() - stop) / 1ms
            << " ms after SIGTERM\n";
}

}  // namespace
}  // namespace ablate
