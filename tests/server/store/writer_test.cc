// The writer thread: batching several callers' writes into one transaction, and isolating a
// failing write from the others of its batch.
#include "server/store/writer.h"

#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/store/connection.h"
#include "store_test_util.h"

namespace ablate {
namespace {

std::unique_ptr<Connection> OpenTable(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Connection>> c = Connection::Open(path, ConnectionOptions{});
  EXPECT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE((*c)->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)").ok());
  return std::move(*c);
}

absl::Status InsertValue(Connection& c, int v) {
  absl::StatusOr<Statement> stmt = c.Prepare("INSERT INTO t (v) VALUES (?)");
  if (!stmt.ok()) return stmt.status();
  stmt->BindAll(v);
  return stmt->Run();
}

int64_t CountRows(const std::string& path) {
  auto c = Connection::Open(path, ConnectionOptions{});
  auto stmt = (*c)->Prepare("SELECT COUNT(*) FROM t");
  EXPECT_TRUE(stmt->Step().value_or(false));
  return stmt->Int(0);
}

TEST(WriterTest, QueuedWritesShareTransactionsAndFailuresStayPrivate) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/w.db";
  Writer writer(OpenTable(path), /*max_batch=*/64);
  absl::Notification release;
  // Hold the writer thread inside one job while the others queue up behind it.
  std::thread blocker([&] {
    EXPECT_TRUE(writer
                    .Write([&](Connection&) {
                      release.WaitForNotification();
                      return absl::OkStatus();
                    })
                    .ok());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(20);
  for (int i = 0; i < 20; ++i) {
    // Each odd thread inserts its even neighbour's value: half of the writes collide.
    threads.emplace_back([&, i] {
      int v = (i % 2 == 0) ? i : i - 1;
      results[i] = writer.Write([v](Connection& c) { return InsertValue(c, v); });
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  release.Notify();
  for (std::thread& t : threads) t.join();
  blocker.join();
  int ok = 0, duplicates = 0;
  for (const absl::Status& s : results) {
    if (s.ok()) ++ok;
    if (s.code() == absl::StatusCode::kAlreadyExists) ++duplicates;
  }
  EXPECT_EQ(ok, 10);
  EXPECT_EQ(duplicates, 10);
  EXPECT_EQ(CountRows(path), 10);
  // 1 for the blocker, then (almost always) a single batch for the 20 queued writes.
  EXPECT_LE(writer.transactions(), 5);
}

TEST(WriterTest, WriteAfterFailureStillCommits) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/w.db";
  Writer writer(OpenTable(path), 8);
  EXPECT_TRUE(writer.Write([](Connection& c) { return InsertValue(c, 1); }).ok());
  absl::Status bad = writer.Write([](Connection& c) {
    absl::Status first = InsertValue(c, 2);  // undone with the failure below
    if (!first.ok()) return first;
    return c.Exec("INSERT INTO no_such_table VALUES (1)");
  });
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(writer.Write([](Connection& c) { return InsertValue(c, 3); }).ok());
  EXPECT_EQ(CountRows(path), 2);
}

TEST(WriterTest, EachCallerReturnsAfterItsOwnWriteIsCommitted) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/w.db";
  Writer writer(OpenTable(path), /*max_batch=*/4);  // small batches: many commits, many wakeups
  constexpr int kThreads = 16;
  constexpr int kWritesPerThread = 25;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // A reader of our own: once Write returns OK the row must be visible to another connection.
      auto reader = Connection::Open(path, ConnectionOptions{});
      ASSERT_TRUE(reader.ok()) << reader.status();
      for (int i = 0; i < kWritesPerThread; ++i) {
        const int v = t * kWritesPerThread + i;
        // Every fifth write collides with a row this thread already wrote: it must fail alone.
        const int value = (i % 5 == 4) ? v - 1 : v;
        absl::Status s = writer.Write([value](Connection& c) { return InsertValue(c, value); });
        if ((i % 5 == 4) != !s.ok()) ++failures[t];
        if (!s.ok()) continue;
        auto stmt = (*reader)->Prepare("SELECT COUNT(*) FROM t WHERE v = ?");
        ASSERT_TRUE(stmt.ok()) << stmt.status();
        stmt->BindAll(value);
        if (!stmt->Step().value_or(false) || stmt->Int(0) != 1) ++failures[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(CountRows(path), kThreads * kWritesPerThread * 4 / 5);
}

TEST(ConnectionTest, ExecCachedRunsOneStatementRepeatedlyAndReportsErrors) {
  testing::TempDir dir;
  std::unique_ptr<Connection> c = OpenTable(dir.path() + "/c.db");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c->ExecCached("BEGIN IMMEDIATE").ok());
    ASSERT_TRUE(c->ExecCached("SAVEPOINT job").ok());
    ASSERT_TRUE(InsertValue(*c, i).ok());
    ASSERT_TRUE(c->ExecCached("RELEASE job").ok());
    ASSERT_TRUE(c->ExecCached("COMMIT").ok());
  }
  EXPECT_FALSE(c->InTransaction());
  absl::Status bad = c->ExecCached("RELEASE job");  // no such savepoint
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(c->ExecCached("NOT SQL").ok());
  EXPECT_FALSE(c->ExecCached("NOT SQL").ok());  // a failed prepare is not cached
  EXPECT_TRUE(c->ExecCached("BEGIN").ok());
  EXPECT_TRUE(c->ExecCached("ROLLBACK").ok());
}

}  // namespace
}  // namespace ablate
