// The on-disk outbox: append/ack/resend order, reopening after a simulated crash, torn records.
#include "worker/outbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/util/subprocess.h"

namespace ablate::worker {
namespace {

using ablate::testing::TempDir;

v1::MetricBatch Batch(int64_t attempt, int64_t first_step, int n) {
  v1::MetricBatch b;
  b.set_attempt_id(attempt);
  b.set_fencing_token(7);
  for (int i = 0; i < n; ++i) {
    v1::MetricPoint* p = b.add_points();
    p->set_step(first_step + i);
    p->set_train_loss(1.0 / double(first_step + i + 1));
  }
  return b;
}

v1::RunFinished Finished(int64_t attempt) {
  v1::RunFinished f;
  f.set_attempt_id(attempt);
  f.set_fencing_token(7);
  f.set_status("ok");
  return f;
}

std::vector<int64_t> Seqs(const std::vector<OutboxEntry>& entries) {
  std::vector<int64_t> seqs;
  for (const OutboxEntry& e : entries) seqs.push_back(e.seq);
  return seqs;
}

class OutboxTest : public ::testing::Test {
 protected:
  std::unique_ptr<Outbox> Open() {
    auto box = Outbox::Open(dir_.path() + "/outbox");
    EXPECT_TRUE(box.ok()) << box.status();
    return box.ok() ? std::move(box).value() : nullptr;
  }
  std::string FileOf(int64_t attempt) {
    return dir_.path() + "/outbox/" + std::to_string(attempt) + ".outbox";
  }
  TempDir dir_;
};

TEST_F(OutboxTest, AssignsSequenceNumbersPerAttempt) {
  auto box = Open();
  EXPECT_EQ(box->AppendBatch(Batch(1, 0, 3))->metrics().seq(), 1);
  EXPECT_EQ(box->AppendBatch(Batch(1, 3, 3))->metrics().seq(), 2);
  EXPECT_EQ(box->AppendBatch(Batch(2, 0, 1))->metrics().seq(), 1);
  EXPECT_EQ(Seqs(box->PendingAfter(1, 0)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Seqs(box->PendingAfter(1, 1)), (std::vector<int64_t>{2}));
  EXPECT_EQ(box->Attempts(), (std::vector<int64_t>{1, 2}));
}

TEST_F(OutboxTest, AckDropsEverythingUpToSeq) {
  auto box = Open();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(box->AppendBatch(Batch(1, i * 10, 2)).ok());
  ASSERT_TRUE(box->Ack(1, 2).ok());
  EXPECT_EQ(Seqs(box->PendingAfter(1, 0)), (std::vector<int64_t>{3, 4}));
  ASSERT_TRUE(box->Ack(1, 1).ok());  // an old ack changes nothing
  EXPECT_EQ(Seqs(box->PendingAfter(1, 0)), (std::vector<int64_t>{3, 4}));
  ASSERT_TRUE(box->Ack(99, 5).ok());  // unknown attempt: ignored
}

TEST_F(OutboxTest, RunFinishedFollowsTheLastBatchAndItsAckRemovesTheFile) {
  auto box = Open();
  ASSERT_TRUE(box->AppendBatch(Batch(3, 0, 2)).ok());
  ASSERT_TRUE(box->AppendFinished(Finished(3)).ok());
  std::vector<OutboxEntry> pending = box->PendingAfter(3, 0);
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_TRUE(pending[0].message.has_metrics());
  EXPECT_TRUE(pending[1].message.has_run_finished());
  EXPECT_EQ(pending[1].seq, 2);
  EXPECT_FALSE(box->AppendBatch(Batch(3, 2, 1)).ok());  // nothing after the end
  ASSERT_TRUE(box->Ack(3, 1).ok());
  EXPECT_TRUE(std::filesystem::exists(FileOf(3)));
  ASSERT_TRUE(box->Ack(3, INT64_MAX).ok());
  EXPECT_FALSE(std::filesystem::exists(FileOf(3)));
  EXPECT_TRUE(box->Attempts().empty());
}

TEST_F(OutboxTest, SurvivesReopenWithSameSeqsAndAcks) {
  std::string first_payload;
  {
    auto box = Open();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(box->AppendBatch(Batch(5, i * 2, 2)).ok());
    ASSERT_TRUE(box->Ack(5, 1).ok());
    first_payload = box->PendingAfter(5, 0)[0].message.SerializeAsString();
  }  // "crash": the process forgets everything in memory
  auto box = Open();
  std::vector<OutboxEntry> pending = box->PendingAfter(5, 0);
  EXPECT_EQ(Seqs(pending), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(pending[0].message.SerializeAsString(), first_payload);  // resent byte for byte
  EXPECT_EQ(box->AppendBatch(Batch(5, 6, 1))->metrics().seq(), 4);  // numbering continues
}

TEST_F(OutboxTest, TornLastRecordIsIgnoredAndCutOff) {
  {
    auto box = Open();
    ASSERT_TRUE(box->AppendBatch(Batch(8, 0, 5)).ok());
    ASSERT_TRUE(box->AppendBatch(Batch(8, 5, 5)).ok());
  }
  // Crash in the middle of the second record: keep only part of it.
  auto size = std::filesystem::file_size(FileOf(8));
  std::filesystem::resize_file(FileOf(8), size - 7);
  {
    auto box = Open();
    EXPECT_EQ(Seqs(box->PendingAfter(8, 0)), (std::vector<int64_t>{1}));
    EXPECT_EQ(box->AppendBatch(Batch(8, 5, 5))->metrics().seq(), 2);
  }
  auto box = Open();  // the appended record after the cut is readable
  EXPECT_EQ(Seqs(box->PendingAfter(8, 0)), (std::vector<int64_t>{1, 2}));
}

TEST_F(OutboxTest, CorruptRecordEndsTheLog) {
  {
    auto box = Open();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(box->AppendBatch(Batch(9, i * 3, 3)).ok());
  }
  std::string bytes = ablate::testing::ReadFile(FileOf(9));
  bytes[bytes.size() - 3] ^= 0x5a;  // flip bits inside the last record's body
  ablate::testing::WriteFile(FileOf(9), bytes);
  auto box = Open();
  EXPECT_EQ(Seqs(box->PendingAfter(9, 0)), (std::vector<int64_t>{1, 2}));
}

TEST_F(OutboxTest, DropForgetsAnAttempt) {
  auto box = Open();
  ASSERT_TRUE(box->AppendBatch(Batch(4, 0, 1)).ok());
  ASSERT_TRUE(box->Drop(4).ok());
  EXPECT_TRUE(box->PendingAfter(4, 0).empty());
  EXPECT_FALSE(std::filesystem::exists(FileOf(4)));
  EXPECT_TRUE(Open()->Attempts().empty());
}

TEST(Crc32Test, KnownValue) { EXPECT_EQ(Crc32("123456789"), 0xCBF43926u); }

}  // namespace
}  // namespace ablate::worker
