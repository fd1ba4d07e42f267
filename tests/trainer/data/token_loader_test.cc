// Training and validation slicing: every world size sees the same global batches and the same
// validation set; shards wrap as token_loader.h documents.
#include "trainer/data/token_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "tests/trainer/data/temp_dir.h"
#include "trainer/data/shard_writer.h"
#include "trainer/data/val_loader.h"

namespace ablate {
namespace {

using ::ablate::testing::TempDir;
using ::testing::HasSubstr;
using Rows = std::vector<int32_t>;  // (B, T+1)

constexpr int64_t kB = 2, kT = 8, kBatch = 64;  // 4 chunks of B·T = 16 per global batch

// Shard k holds tokens k·1000 + i, so a token says where it came from.
std::vector<std::string> MakeShards(const TempDir& dir, const std::string& prefix,
                                    const std::vector<int>& sizes) {
  std::vector<std::string> files;
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<uint16_t> t(sizes[k]);
    for (int i = 0; i < sizes[k]; ++i) t[i] = static_cast<uint16_t>(k * 1000 + i);
    files.push_back(dir.File(prefix + std::to_string(k) + ".bin"));
    EXPECT_TRUE(WriteShard(files.back(), t).ok());
  }
  return files;
}

// Global batches[step][chunk] as seen by `world` ranks together.
std::vector<std::vector<Rows>> TrainBatches(const std::vector<std::string>& files, int world,
                                            int steps) {
  std::vector<TokenLoader> ranks;
  for (int r = 0; r < world; ++r) {
    Result<TokenLoader> l = TokenLoader::Open({files, kBatch, kB, kT, r, world, 0});
    EXPECT_TRUE(l.ok()) << l.error().message;
    ranks.push_back(std::move(l).value());
  }
  std::vector<std::vector<Rows>> out(steps, std::vector<Rows>(kBatch / (kB * kT)));
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(ranks[r].grad_accum_steps(), 4 / world);
      for (int m = 0; m < 4 / world; ++m) {
        Rows rows(kB * (kT + 1));
        EXPECT_TRUE(ranks[r].NextBatch(rows.data()).ok());
        out[s][m * world + r] = rows;
      }
    }
  }
  return out;
}

Rows Expected(int shard, int start) {
  Rows rows;
  for (int b = 0; b < kB; ++b) {
    for (int t = 0; t <= kT; ++t) rows.push_back(shard * 1000 + start + b * kT + t);
  }
  return rows;
}

TEST(TokenLoaderTest, SlicingAndShardWrap) {
  TempDir dir;
  // Shard 0 fits two batches (129 ≤ 150 < 193), shard 1 is too small, shard 2 fits one.
  std::vector<std::string> files = MakeShards(dir, "train_", {150, 40, 100});
  std::vector<std::vector<Rows>> b = TrainBatches(files, 1, 5);
  EXPECT_EQ(b[0][0], Expected(0, 0));
  EXPECT_EQ(b[0][3], Expected(0, 48));  // rows overlap by one token: targets shifted by one
  EXPECT_EQ(b[1][1], Expected(0, 64 + 16));
  EXPECT_EQ(b[2][0], Expected(2, 0));   // shard 0 exhausted, shard 1 skipped
  EXPECT_EQ(b[3][2], Expected(0, 32));  // wrapped to the first shard
  EXPECT_EQ(b[4][0], Expected(0, 64));
}

TEST(TokenLoaderTest, WorldSizesCoverTheSameGlobalBatches) {
  TempDir dir;
  std::vector<std::string> files = MakeShards(dir, "train_", {150, 40, 100});
  std::vector<std::vector<Rows>> one = TrainBatches(files, 1, 6);
  EXPECT_EQ(TrainBatches(files, 2, 6), one);
  EXPECT_EQ(TrainBatches(files, 4, 6), one);
}

TEST(TokenLoaderTest, ResetStartsOver) {
  TempDir dir;
  std::vector<std::string> files = MakeShards(dir, "train_", {150, 100});
  Result<TokenLoader> l = TokenLoader::Open({files, kBatch, kB, kT, 0, 1, 0});
  ASSERT_TRUE(l.ok());
  Rows first(kB * (kT + 1)), again(kB * (kT + 1));
  ASSERT_TRUE(l.value().NextBatch(first.data()).ok());
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(l.value().NextBatch(again.data()).ok());
  l.value().Reset();
  ASSERT_TRUE(l.value().NextBatch(again.data()).ok());
  EXPECT_EQ(first, again);
}

TEST(TokenLoaderTest, RejectsBadOptionsAndShards) {
  TempDir dir;
  std::vector<std::string> small = MakeShards(dir, "s_", {64, 30});
  Result<TokenLoader> none_fits = TokenLoader::Open({small, kBatch, kB, kT, 0, 1, 0});
  ASSERT_FALSE(none_fits.ok());
  EXPECT_THAT(none_fits.error().message, HasSubstr("65 tokens"));
  std::vector<std::string> files = MakeShards(dir, "t_", {150});
  EXPECT_FALSE(TokenLoader::Open({files, 48, kB, kT, 0, 2, 0}).ok());  // 48 % 32 != 0
  EXPECT_FALSE(TokenLoader::Open({files, kBatch, kB, kT, 2, 2, 0}).ok());
  // Token ≥ vocab is found when the shard is read.
  Result<TokenLoader> l = TokenLoader::Open({files, kBatch, kB, kT, 0, 1, 100});
  ASSERT_TRUE(l.ok());
  Rows rows(kB * (kT + 1));
  Status s = l.value().NextBatch(rows.data());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(files[0]));
  EXPECT_THAT(s.message(), HasSubstr("byte 1224"));  // token 100 at index 100
}

// Every validation batch by global index, as `world` ranks produce them.
std::map<int, Rows> ValBatches(const std::vector<std::string>& files, int64_t val_tokens,
                               int world) {
  std::map<int, Rows> out;
  for (int r = 0; r < world; ++r) {
    Result<ValLoader> v = ValLoader::Open({files, val_tokens, kB, kT, r, world, 0});
    EXPECT_TRUE(v.ok()) << v.error().message;
    Rows rows(kB * (kT + 1));
    for (int k = r; v.value().NextBatch(rows.data()); k += world) {
      EXPECT_EQ(out.count(k), 0u);
      out[k] = rows;
    }
  }
  return out;
}

TEST(ValLoaderTest, SameSetForEveryWorldSize) {
  TempDir dir;
  std::vector<std::string> files = MakeShards(dir, "val_", {50, 50});
  std::map<int, Rows> one = ValBatches(files, 70, 1);
  ASSERT_EQ(one.size(), 4u);  // 70 / 16
  EXPECT_EQ(one[0], Expected(0, 0));
  Rows crossing = one[3];  // tokens 48..64 span both shards
  EXPECT_EQ(crossing[0], 48);
  EXPECT_EQ(crossing[2], 1000);
  EXPECT_EQ(crossing.back(), 1000 + 14);
  for (int world : {2, 3, 4}) EXPECT_EQ(ValBatches(files, 70, world), one) << world;
}

TEST(ValLoaderTest, ClampsToAvailableTokensAndRejectsTooFew) {
  TempDir dir;
  std::vector<std::string> files = MakeShards(dir, "val_", {100});
  Result<ValLoader> v = ValLoader::Open({files, 1000, kB, kT, 0, 1, 0});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->num_batches(), 6);  // 99 inputs / 16
  EXPECT_EQ(v->tokens(), 96);
  std::vector<std::string> tiny = MakeShards(dir, "tiny_", {16});
  Result<ValLoader> too_few = ValLoader::Open({tiny, 1000, kB, kT, 0, 1, 0});
  ASSERT_FALSE(too_few.ok());
  EXPECT_THAT(too_few.error().message, HasSubstr("17"));
}

}  // namespace
}  // namespace ablate
