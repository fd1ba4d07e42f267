// The WAL checkpoints off the writer's thread: the Checkpointer's own thread copies the log into
// the database file, and the writer checkpoints itself only when that falls far behind.
#include "server/store/checkpointer.h"

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "server/store/connection.h"
#include "store_test_util.h"
#include "tests/hardening/small_disk.h"

namespace ablate {
namespace {

std::unique_ptr<Connection> Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Connection>> c = Connection::Open(path, ConnectionOptions{});
  EXPECT_TRUE(c.ok()) << c.status();
  return std::move(*c);
}

// One transaction per row of 4 KiB: at least one new log page per commit.
void InsertRows(Connection& c, int first, int count) {
  for (int i = first; i < first + count; ++i) {
    absl::StatusOr<Statement> stmt = c.Prepare("INSERT INTO t (v, pad) VALUES (?, zeroblob(4096))");
    ASSERT_TRUE(stmt.ok()) << stmt.status();
    stmt->BindAll(i);
    ASSERT_TRUE(stmt->Run().ok());
  }
}

int64_t Rows(const std::string& path) {
  std::unique_ptr<Connection> c = Open(path);
  absl::StatusOr<Statement> stmt = c->Prepare("SELECT COUNT(*) FROM t");
  EXPECT_TRUE(stmt.ok() && stmt->Step().value_or(false));
  return stmt->Int(0);
}

TEST(CheckpointerTest, ItsOwnThreadCopiesTheLogIntoTheDatabaseFile) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/c.db";
  std::unique_ptr<Connection> writer = Open(path);
  ASSERT_TRUE(writer->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY, pad BLOB)").ok());
  const auto before = std::filesystem::file_size(path);
  Checkpointer checkpointer(Open(path), writer->handle(), /*pages=*/20,
                            /*inline_pages=*/1'000'000);
  InsertRows(*writer, 0, 100);  // about 200 log pages: past the threshold many times
  // The rows' pages reach the database file itself, not only the log. Only the thread copies
  // them (the writer's own threshold is out of reach), and each of its checkpoints may come
  // after any commit, so wait for most rows rather than for the first checkpoint. The file
  // grows while a checkpoint copies, before the thread counts it: wait for the count too.
  const auto wanted = before + 50 * 4096;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((std::filesystem::file_size(path) <= wanted ||
          checkpointer.background_checkpoints() == 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(std::filesystem::file_size(path), wanted);
  EXPECT_GT(checkpointer.background_checkpoints(), 0);
  EXPECT_EQ(checkpointer.inline_checkpoints(), 0);
  EXPECT_EQ(Rows(path), 100);
}

// A request (the store's, after a commit failed for a full disk) is a checkpoint whatever the
// log's length: on a disk with less room than the threshold's log, nothing else would copy it.
TEST(CheckpointerTest, ARequestCheckpointsALogShorterThanTheThreshold) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/c.db";
  std::unique_ptr<Connection> writer = Open(path);
  ASSERT_TRUE(writer->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY, pad BLOB)").ok());
  const auto before = std::filesystem::file_size(path);
  Checkpointer checkpointer(Open(path), writer->handle(), /*pages=*/1'000'000,
                            /*inline_pages=*/1'000'000);
  InsertRows(*writer, 0, 30);  // about 60 log pages, far below either threshold
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(checkpointer.background_checkpoints(), 0) << "nothing asked for one yet";
  checkpointer.Request();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (checkpointer.background_checkpoints() == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(checkpointer.background_checkpoints(), 1);
  EXPECT_GT(std::filesystem::file_size(path), before + 20 * 4096) << "the rows reached the file";
  EXPECT_EQ(checkpointer.inline_checkpoints(), 0);
  EXPECT_EQ(Rows(path), 30);
}

TEST(CheckpointerTest, ASteadyStreamOfCommitsGetsOneCheckpointPerGapNotOnePerCommit) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/c.db";
  std::unique_ptr<Connection> writer = Open(path);
  ASSERT_TRUE(writer->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY, pad BLOB)").ok());
  Checkpointer checkpointer(Open(path), writer->handle(), /*pages=*/20,
                            /*inline_pages=*/1'000'000);
  // Every commit past the first few leaves the log at 20 pages or more and asks for a
  // checkpoint; each of them syncs two files, so they are spaced kGap apart.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 300; ++i) {
    InsertRows(*writer, i, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double gaps = std::chrono::duration<double>(std::chrono::steady_clock::now() - start) /
                      absl::ToChronoMilliseconds(Checkpointer::kGap);
  EXPECT_GT(checkpointer.background_checkpoints(), 0);
  EXPECT_LE(checkpointer.background_checkpoints(), static_cast<int64_t>(gaps) + 2)
      << "over " << gaps << " gaps";
  writer.reset();
  EXPECT_EQ(Rows(path), 300);
}

TEST(CheckpointerTest, AWriterFarBehindCheckpointsItselfSoTheLogStaysBounded) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/c.db";
  std::unique_ptr<Connection> writer = Open(path);
  ASSERT_TRUE(writer->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY, pad BLOB)").ok());
  {
    // The thread is never asked (its threshold is out of reach); the writer's is 20 pages.
    Checkpointer checkpointer(Open(path), writer->handle(), /*pages=*/1'000'000,
                              /*inline_pages=*/20);
    InsertRows(*writer, 0, 200);  // 800 KiB of rows
    EXPECT_GT(checkpointer.inline_checkpoints(), 0);
    EXPECT_EQ(checkpointer.background_checkpoints(), 0);
    // Each checkpoint lets the next commit start the log over: it never holds 200 rows.
    EXPECT_LT(std::filesystem::file_size(path + "-wal"), 100 * 4096);
    writer.reset();  // the writer's connection closes before the Checkpointer goes
  }
  EXPECT_EQ(Rows(path), 200);
}


// Rewrites one row of 4 KiB `count` times, a transaction each: the database stays one row, the
// log grows by a page or two per commit. Returns how many commits failed.
int RewriteOneRow(Connection& c, int count, std::string* first_error) {
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<Statement> stmt =
        c.Prepare("INSERT OR REPLACE INTO t (v, pad) VALUES (1, randomblob(4096))");
    if (!stmt.ok()) {
      if (failed++ == 0) *first_error = stmt.status().ToString();
      continue;
    }
    const absl::Status s = stmt->Run();
    if (!s.ok() && failed++ == 0) *first_error = s.ToString();
  }
  return failed;
}

// The log of 3,000 commits is about 24 MiB, three times the disk, far below the page thresholds
// (32 MiB, 128 MiB). Asked for the free room, the Checkpointer copies the log before it takes the
// disk and every commit lands; without it, the log fills the disk and commits fail (the wedge).
void RewriteOnASmallDisk(bool with_free_bytes, int* failed, std::string* first_error) {
  testing::SmallDisk disk(8);
  if (!disk.mounted()) GTEST_SKIP() << "needs a tmpfs mount (root): " << disk.error();
  const std::string path = disk.path() + "/c.db";
  std::unique_ptr<Connection> writer = Open(path);
  ASSERT_TRUE(writer->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY, pad BLOB)").ok());
  {
    Checkpointer checkpointer(Open(path), writer->handle(), Checkpointer::kPages,
                              Checkpointer::kInlinePages,
                              with_free_bytes ? Checkpointer::FreeBytesOf(disk.path())
                                              : Checkpointer::FreeBytes{});
    *failed = RewriteOneRow(*writer, 3000, first_error);
    writer.reset();
  }
  if (with_free_bytes) {
    EXPECT_EQ(Rows(path), 1);
  }
}

TEST(CheckpointerTest, OnASmallDiskTheLogIsCopiedBeforeItFillsTheDisk) {
  int failed = 0;
  std::string first_error;
  RewriteOnASmallDisk(/*with_free_bytes=*/true, &failed, &first_error);
  if (IsSkipped()) return;
  EXPECT_EQ(failed, 0) << "first: " << first_error;
}

// The twin that shows the test above can fail: the page thresholds alone let the log fill it.
TEST(CheckpointerTest, WithoutTheFreeRoomTheLogFillsASmallDisk) {
  int failed = 0;
  std::string first_error;
  RewriteOnASmallDisk(/*with_free_bytes=*/false, &failed, &first_error);
  if (IsSkipped()) return;
  EXPECT_GT(failed, 0);
  EXPECT_NE(first_error.find("full"), std::string::npos) << first_error;
}

}  // namespace
}  // namespace ablate
