// Code snapshots of script runs (migrations/0005_code_snapshots.sql, store_snapshots.cc): stored
// once per hash, read back byte for byte (binary content included), unknown hashes NOT_FOUND.
#include <string>

#include "gtest/gtest.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::OpenOrDie;
using testing::TempDir;

TEST(StoreSnapshotsTest, StoredOnceByHashAndReadBackExactly) {
  TempDir dir;
  std::unique_ptr<Store> store = OpenOrDie(dir.path() + "/s.db");
  std::string binary("\x00\xff\x01 not utf-8 \xc3", 15);
  Snapshot files = {{"pkg/__main__.py", "print(1)\n", true}, {"pkg/blob.bin", binary, false}};
  const std::string hash = SnapshotHash(files);
  ASSERT_TRUE(store->PutSnapshot(hash, files).ok());
  ASSERT_TRUE(store->PutSnapshot(hash, files).ok());  // the same bytes again: nothing new
  EXPECT_EQ(store->CountSnapshots().value(), 1);
  absl::StatusOr<Snapshot> back = store->GetSnapshot(hash);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, files);
  EXPECT_EQ(SnapshotHash(*back), hash);
  EXPECT_EQ(store->GetSnapshot(std::string(64, '0')).status().code(),
            absl::StatusCode::kNotFound);
  // Refused before anything is written: a bad hash, an escaping path.
  EXPECT_FALSE(store->PutSnapshot("abc", files).ok());
  EXPECT_FALSE(store->PutSnapshot(std::string(64, '1'), {{"../x.py", "x", false}}).ok());
  EXPECT_EQ(store->CountSnapshots().value(), 1);
  // A reopened store still has it.
  store.reset();
  store = OpenOrDie(dir.path() + "/s.db");
  EXPECT_EQ(store->GetSnapshot(hash).value(), files);
}

}  // namespace
}  // namespace ablate
