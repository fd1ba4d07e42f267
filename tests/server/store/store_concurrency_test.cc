// The store under concurrent use, on a real file and in memory: every write from many threads
// committed, failing writes reported to their callers only, and a reopened file keeping all.
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/store/store.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::AddSweep;
using testing::OpenOrDie;

enum class Where { kFile, kMemory };
void PrintTo(Where where, std::ostream* os) { *os << (where == Where::kFile ? "file" : "memory"); }

class StoreConcurrencyTest : public ::testing::TestWithParam<Where> {
 protected:
  std::string Path() { return GetParam() == Where::kFile ? dir_.path() + "/c.db" : ":memory:"; }
  testing::TempDir dir_;
};

Event LogEvent(int64_t sweep_id, int64_t run_id, const std::string& message) {
  Event e;
  e.sweep_id = sweep_id;
  e.run_id = run_id;
  e.kind = "log";
  e.message = message;
  return e;
}

TEST_P(StoreConcurrencyTest, ConcurrentWritersAllCommitWhileReadersRead) {
  auto store = OpenOrDie(Path());
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 8;
  constexpr int kBatches = 25;
  int64_t sweep_id = AddSweep(*store, "load", {}, /*seeds=*/kThreads / 2);
  RunFilter filter;
  filter.sweep_id = sweep_id;
  std::vector<ablate::Run> runs = store->ListRuns(filter).value();
  ASSERT_EQ(runs.size(), static_cast<size_t>(kThreads));

  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!done) {
      EXPECT_TRUE(store->ListEvents(sweep_id, 0, 0, 0).ok());
      EXPECT_TRUE(store->CountRunsByState(sweep_id).ok());
      ++reads;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      Attempt a = store->CreateAttempt(runs[t].id, "w" + std::to_string(t)).value();
      for (int b = 0; b < kBatches; ++b) {
        MetricPoint p;
        p.step = b;
        p.train_loss = 10.0 - b;
        EXPECT_TRUE(store->AppendMetrics(runs[t].id, a.id, a.fencing_token, b, {p}).ok());
        EXPECT_TRUE(store->AppendEvent(LogEvent(sweep_id, runs[t].id, "step")).ok());
      }
    });
  }
  for (std::thread& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  for (const ablate::Run& run : runs) {
    EXPECT_EQ(store->GetMetrics(run.id, 0).value().total_points, kBatches);
    EXPECT_EQ(store->ListEvents(sweep_id, run.id, 0, 0).value().size(),
              static_cast<size_t>(kBatches) + 1);  // + the "assigned" state event
  }
}

TEST_P(StoreConcurrencyTest, WriteErrorGoesToItsCallerAndWriterCarriesOn) {
  auto store = OpenOrDie(Path());
  ASSERT_NE(store, nullptr);
  int64_t sweep_id = AddSweep(*store, "errors");
  // A foreign key violation: no sweep 999.
  absl::StatusOr<int64_t> bad = store->AppendEvent(LogEvent(999, 0, "orphan"));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kFailedPrecondition) << bad.status();
  EXPECT_NE(bad.status().message().find("FOREIGN KEY"), std::string::npos) << bad.status();

  // Good and bad writes interleaved from many threads, so that batches mix them.
  std::atomic<int> good_ok{0}, bad_failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        bool good = (i + t) % 2 == 0;
        absl::StatusOr<int64_t> id =
            store->AppendEvent(LogEvent(good ? sweep_id : 999 + t, 0, "x"));
        if (good && id.ok()) ++good_ok;
        if (!good && id.status().code() == absl::StatusCode::kFailedPrecondition) ++bad_failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(good_ok.load(), 80);
  EXPECT_EQ(bad_failed.load(), 80);
  EXPECT_EQ(store->ListEvents(sweep_id, 0, 0, 0).value().size(), 81u);  // + "submitted"
  EXPECT_TRUE(store->AppendEvent(LogEvent(sweep_id, 0, "still fine")).ok());
}

INSTANTIATE_TEST_SUITE_P(FileAndMemory, StoreConcurrencyTest,
                         ::testing::Values(Where::kFile, Where::kMemory), [](const auto& info) {
                           return info.param == Where::kFile ? "File" : "Memory";
                         });

TEST(StoreReopenTest, ReopeningAFileKeepsEverything) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/reopen.db";
  int64_t sweep_id = 0, run_id = 0, attempt_id = 0;
  {
    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    sweep_id = AddSweep(*store, "durable", {"keep"});
    RunFilter filter;
    filter.sweep_id = sweep_id;
    run_id = store->ListRuns(filter).value()[0].id;
    Attempt a = store->CreateAttempt(run_id, "w").value();
    attempt_id = a.id;
    ASSERT_TRUE(store->MarkAttemptRunning(a.id, a.fencing_token).ok());
    MetricPoint p;
    p.step = 7;
    p.val_loss = 3.5;
    ASSERT_FALSE(store->AppendMetrics(run_id, a.id, a.fencing_token, 0, {p}).value());
    Worker w;
    w.id = "w";
    ASSERT_TRUE(store->UpsertWorker(w).ok());
  }
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  Sweep sweep = store->GetSweep(sweep_id).value();
  EXPECT_EQ(sweep.name, "durable");
  EXPECT_EQ(sweep.state, SweepState::kRunning);
  EXPECT_EQ(sweep.tags, std::vector<std::string>{"keep"});
  ablate::Run run = store->GetRun(run_id).value();
  EXPECT_EQ(run.state, RunState::kRunning);
  EXPECT_EQ(run.current_attempt_id, attempt_id);
  MetricCurve curve = store->GetMetrics(run_id, 0).value();
  ASSERT_EQ(curve.points.size(), 1u);
  EXPECT_EQ(curve.points[0].val_loss, 3.5);
  EXPECT_EQ(store->ListWorkers().value().size(), 1u);
  EXPECT_GE(store->ListEvents(sweep_id, 0, 0, 0).value().size(), 3u);
  Attempt a = store->GetAttempt(attempt_id).value();
  // Duplicate detection survives the restart too.
  MetricPoint p;
  p.step = 7;
  EXPECT_TRUE(store->AppendMetrics(run_id, a.id, a.fencing_token, 0, {p}).value());
}

TEST(StoreOpenTest, UnopenablePathIsReported) {
  absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Open("/nonexistent-dir/for/sure/x.db", StoreOptions{});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_EQ(Store::Open("", StoreOptions{}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StoreOpenTest, MemoryStoresAreSeparate) {
  auto a = OpenOrDie(":memory:");
  auto b = OpenOrDie(":memory:");
  ASSERT_TRUE(a && b);
  AddSweep(*a, "only-in-a");
  EXPECT_EQ(a->ListSweeps().value().size(), 1u);
  EXPECT_TRUE(b->ListSweeps().value().empty());
}

}  // namespace
}  // namespace ablate
