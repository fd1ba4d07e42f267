// Group commit (issue 28): metric batches of many threads committed together, the fencing check
// answered from memory between other writes and never after one, heartbeats queued into the
// group, and a refused batch that neither commits nor spoils the others of its group.
#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/store/connection.h"
#include "server/store/fence_cache.h"
#include "server/store/store.h"
#include "server/store/writer.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::AddSweep;
using testing::OpenOrDie;

std::vector<MetricPoint> Step(int64_t step) {
  MetricPoint p;
  p.step = step;
  p.train_loss = 5.0;
  return {p};
}

TEST(FenceCacheTest, RemembersPairsUntilClearedAndStartsOverWhenFull) {
  FenceCache cache(/*capacity=*/2);
  cache.Remember(1, 10, 7);
  EXPECT_TRUE(cache.Knows(1, 10, 7));
  EXPECT_FALSE(cache.Knows(1, 10, 8)) << "another token";
  EXPECT_FALSE(cache.Knows(2, 10, 7)) << "another run";
  cache.Remember(1, 11, 7);
  cache.Remember(1, 12, 7);  // over capacity: starts over with this one
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.Knows(1, 12, 7));
  cache.Clear();
  EXPECT_FALSE(cache.Knows(1, 12, 7));
}

// The check of attempt 1 is cached by its first batch; losing it and assigning attempt 2 (other
// writes) must make its next batch read the check again and be refused.
TEST(GroupCommitTest, ACachedFencingCheckDoesNotOutliveANewAttempt) {
  std::unique_ptr<Store> store = OpenOrDie(":memory:");
  int64_t sweep = AddSweep(*store, "fence", {}, 1);
  RunFilter filter;
  filter.sweep_id = sweep;
  const int64_t run = store->ListRuns(filter).value()[0].id;
  Attempt first = store->CreateAttempt(run, "w1").value();
  ASSERT_TRUE(store->AppendMetrics(run, first.id, first.fencing_token, 1, Step(1)).ok());
  ASSERT_TRUE(store->AppendMetrics(run, first.id, first.fencing_token, 2, Step(2)).ok());
  ASSERT_TRUE(store->LoseAttempt(first.id, "test").ok());
  absl::StatusOr<bool> stale = store->AppendMetrics(run, first.id, first.fencing_token, 3, Step(3));
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition) << stale.status();
  Attempt second = store->CreateAttempt(run, "w2").value();
  stale = store->AppendMetrics(run, first.id, first.fencing_token, 4, Step(4));
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition) << stale.status();
  EXPECT_TRUE(store->AppendMetrics(run, second.id, second.fencing_token, 1, Step(1)).ok());
  EXPECT_EQ(store->CommittedBatchSeqs(first.id).value(), (std::vector<int64_t>{1, 2}));
}

// A wrong token for a cached attempt is not taken from the cache.
TEST(GroupCommitTest, AWrongTokenIsRefusedAfterTheRightOneWasCached) {
  std::unique_ptr<Store> store = OpenOrDie(":memory:");
  int64_t sweep = AddSweep(*store, "token", {}, 1);
  RunFilter filter;
  filter.sweep_id = sweep;
  const int64_t run = store->ListRuns(filter).value()[0].id;
  Attempt a = store->CreateAttempt(run, "w").value();
  ASSERT_TRUE(store->AppendMetrics(run, a.id, a.fencing_token, 1, Step(1)).ok());
  absl::StatusOr<bool> forged = store->AppendMetrics(run, a.id, a.fencing_token + 1, 2, Step(2));
  EXPECT_EQ(forged.status().code(), absl::StatusCode::kFailedPrecondition) << forged.status();
  absl::StatusOr<bool> other_run =
      store->AppendMetrics(run + 1000, a.id, a.fencing_token, 2, Step(2));
  EXPECT_FALSE(other_run.ok());
  EXPECT_EQ(store->CommittedBatchSeqs(a.id).value(), (std::vector<int64_t>{1}));
}

// Many threads append at once (the writer groups them); the stale attempt's batches are refused
// inside those groups and every other batch commits, exactly once, with a heartbeat queued in.
TEST(GroupCommitTest, ConcurrentAppendsCommitTogetherAndARefusedBatchSpoilsNoOther) {
  testing::TempDir dir;
  std::unique_ptr<Store> store = OpenOrDie(dir.path() + "/g.db");
  constexpr int kRuns = 16;
  constexpr int kBatches = 40;
  int64_t sweep = AddSweep(*store, "group", {}, kRuns);
  RunFilter filter;
  filter.sweep_id = sweep;
  std::vector<ablate::Run> runs = store->ListRuns(filter).value();
  ASSERT_GE(runs.size(), static_cast<size_t>(kRuns));
  runs.resize(kRuns);
  Worker w;
  w.id = "w";
  ASSERT_TRUE(store->UpsertWorker(w).ok());
  std::vector<Attempt> attempts;
  for (const ablate::Run& r : runs) attempts.push_back(store->CreateAttempt(r.id, "w").value());
  // Run 0's attempt is lost: every batch it sends is refused.
  ASSERT_TRUE(store->LoseAttempt(attempts[0].id, "test").ok());
  std::vector<std::thread> threads;
  std::atomic<int> refused{0}, committed{0};
  for (int i = 0; i < kRuns; ++i) {
    threads.emplace_back([&, i] {
      for (int seq = 1; seq <= kBatches; ++seq) {
        if (seq % 10 == 0) store->TouchWorkerLater("w", 5000 + seq);
        absl::StatusOr<bool> dup = store->AppendMetrics(runs[i].id, attempts[i].id,
                                                        attempts[i].fencing_token, seq, Step(seq));
        if (i == 0) {
          EXPECT_EQ(dup.status().code(), absl::StatusCode::kFailedPrecondition);
          refused += dup.ok() ? 0 : 1;
        } else {
          EXPECT_TRUE(dup.ok() && !*dup) << dup.status();
          committed += dup.ok() ? 1 : 0;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(refused.load(), kBatches);
  EXPECT_EQ(committed.load(), (kRuns - 1) * kBatches);
  EXPECT_TRUE(store->CommittedBatchSeqs(attempts[0].id).value().empty());
  for (int i = 1; i < kRuns; ++i) {
    MetricCurve curve = store->GetMetrics(runs[i].id, 0).value();
    EXPECT_EQ(curve.total_points, kBatches) << "run " << i;
    EXPECT_EQ(store->CommittedBatchSeqs(attempts[i].id).value().size(),
              static_cast<size_t>(kBatches));
  }
  // The queued heartbeats are committed by the time a later write from any thread returns.
  ASSERT_TRUE(store->SetWorkerConnected("w", true).ok());
  EXPECT_EQ(store->GetWorker("w").value().last_heartbeat_ms, 5000 + kBatches);
}

std::unique_ptr<Connection> OpenTable(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Connection>> c = Connection::Open(path, ConnectionOptions{});
  EXPECT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE((*c)->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)").ok());
  return std::move(*c);
}

int64_t Count(Connection& c) {
  auto stmt = c.Prepare("SELECT COUNT(*) FROM t");
  EXPECT_TRUE(stmt->Step().value_or(false));
  return stmt->Int(0);
}

// Posted jobs join the group of the blocking writes queued with them; a job that rolls the whole
// transaction back loses every job of its group and calls on_lost once.
TEST(WriterGroupTest, PostedJobsJoinTheGroupAndALostTransactionCallsOnLost) {
  testing::TempDir dir;
  std::atomic<int> lost{0};
  Writer writer(OpenTable(dir.path() + "/w.db"), 64, [&] { ++lost; });
  absl::Notification release;
  std::thread blocker([&] {
    EXPECT_TRUE(writer
                    .Write([&](Connection&) {
                      release.WaitForNotification();
                      return absl::OkStatus();
                    })
                    .ok());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int64_t before = writer.transactions();
  for (int v = 1; v <= 5; ++v) {
    ASSERT_TRUE(writer.Post([v](Connection& c) {
      return c.Exec("INSERT INTO t (v) VALUES (" + std::to_string(v) + ")");
    }));
  }
  std::thread counter([&] {
    int64_t n = -1;
    EXPECT_TRUE(writer
                    .Write([&](Connection& c) {
                      n = Count(c);
                      return absl::OkStatus();
                    })
                    .ok());
    EXPECT_EQ(n, 5) << "the posted jobs ran before it, in its transaction";
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release.Notify();
  blocker.join();
  counter.join();
  EXPECT_EQ(writer.transactions() - before, 2) << "the blocker's, then one for the rest";
  EXPECT_EQ(lost.load(), 0);
  // A job that ends the transaction itself: the whole group is lost and nobody hears OK.
  absl::Status a, b;
  absl::Notification release_again;
  std::thread hold([&] {
    (void)writer.Write([&](Connection&) {
      release_again.WaitForNotification();
      return absl::OkStatus();
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread ta([&] {
    a = writer.Write([](Connection& c) { return c.Exec("INSERT INTO t (v) VALUES (100)"); });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::thread tb([&] { b = writer.Write([](Connection& c) { return c.Exec("ROLLBACK"); }); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release_again.Notify();
  hold.join();
  ta.join();
  tb.join();
  EXPECT_FALSE(a.ok()) << "its transaction was rolled back";
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(lost.load(), 1);
  int64_t n = -1;
  ASSERT_TRUE(writer
                  .Write([&](Connection& c) {
                    n = Count(c);
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(n, 5);
}

}  // namespace
}  // namespace ablate
