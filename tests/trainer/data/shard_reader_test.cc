// Shard round trips and every way a shard can be bad: each error names the file and offset.
#include "trainer/data/shard_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "tests/trainer/data/temp_dir.h"
#include "trainer/data/shard_writer.h"

namespace ablate {
namespace {

using ::ablate::testing::RawShard;
using ::ablate::testing::TempDir;
using ::ablate::testing::WriteBytes;
using ::testing::HasSubstr;

std::vector<uint16_t> Iota(size_t n) {
  std::vector<uint16_t> t(n);
  std::iota(t.begin(), t.end(), uint16_t{0});
  return t;
}

TEST(ShardReaderTest, RoundTrip) {
  TempDir dir;
  std::vector<uint16_t> tokens = Iota(1000);
  tokens[7] = 65535;
  ASSERT_TRUE(WriteShard(dir.File("a.bin"), tokens).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.File("a.bin.tmp")));
  Result<ShardHeader> h = ReadShardHeader(dir.File("a.bin"));
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->magic, kShardMagic);
  EXPECT_EQ(h->version, kShardVersion);
  EXPECT_EQ(h->num_tokens, 1000);
  EXPECT_EQ(h->file_bytes, 1024 + 2000);
  Result<std::vector<uint16_t>> back = ReadShardTokens(dir.File("a.bin"), 0);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, tokens);
  Result<std::vector<uint16_t>> range = ReadShardRange(dir.File("a.bin"), 10, 5, 0);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, (std::vector<uint16_t>{10, 11, 12, 13, 14}));
}

TEST(ShardReaderTest, EmptyShardIsValid) {
  TempDir dir;
  ASSERT_TRUE(WriteShard(dir.File("e.bin"), {}).ok());
  Result<std::vector<uint16_t>> back = ReadShardTokens(dir.File("e.bin"), 10);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->empty());
}

// Expects reading `path` to fail with a message naming it and containing every `parts`.
void ExpectBad(const std::string& path, std::vector<std::string> parts) {
  Result<std::vector<uint16_t>> r = ReadShardTokens(path, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr(path));
  for (const std::string& p : parts) EXPECT_THAT(r.error().message, HasSubstr(p));
}

TEST(ShardReaderTest, WrongMagic) {
  TempDir dir;
  WriteBytes(dir.File("m.bin"), RawShard(12345, 1, 3, {1, 2, 3}));
  ExpectBad(dir.File("m.bin"), {"byte 0", "wrong magic 12345", "20240520"});
}

TEST(ShardReaderTest, WrongVersion) {
  TempDir dir;
  WriteBytes(dir.File("v.bin"), RawShard(kShardMagic, 7, 3, {1, 2, 3}));
  ExpectBad(dir.File("v.bin"), {"byte 4", "wrong version 7"});
}

TEST(ShardReaderTest, TruncatedHeader) {
  TempDir dir;
  std::vector<char> bytes = RawShard(kShardMagic, 1, 3, {});
  bytes.resize(100);
  WriteBytes(dir.File("h.bin"), bytes);
  ExpectBad(dir.File("h.bin"), {"byte 100", "truncated header", "100 bytes", "1024"});
}

TEST(ShardReaderTest, TruncatedBody) {
  TempDir dir;
  WriteBytes(dir.File("t.bin"), RawShard(kShardMagic, 1, 10, {1, 2, 3}));
  ExpectBad(dir.File("t.bin"), {"byte 1030", "truncated body", "1030 bytes", "10", "1044"});
}

TEST(ShardReaderTest, SizeMismatchWithTrailingBytes) {
  TempDir dir;
  WriteBytes(dir.File("s.bin"), RawShard(kShardMagic, 1, 2, {1, 2, 3, 4}));
  ExpectBad(dir.File("s.bin"), {"byte 1028", "size mismatch", "1032 bytes", "count 2", "1028"});
}

TEST(ShardReaderTest, TokenAtOrAboveVocab) {
  TempDir dir;
  WriteBytes(dir.File("v.bin"), RawShard(kShardMagic, 1, 5, {1, 2, 99, 100, 7}));
  ExpectBad(dir.File("v.bin"), {"byte 1030", "token 100", "index 3", "vocab_size 100"});
  // The range reader reports the absolute offset too.
  Result<std::vector<uint16_t>> r = ReadShardRange(dir.File("v.bin"), 3, 2, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("byte 1030"));
}

TEST(ShardReaderTest, MissingFileAndDirectory) {
  TempDir dir;
  Result<ShardHeader> h = ReadShardHeader(dir.File("nope.bin"));
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(h.error().message, HasSubstr(dir.File("nope.bin")));
  EXPECT_FALSE(ReadShardHeader(dir.path().string()).ok());
}

TEST(ShardReaderTest, GlobIsSortedAndEmptyMatchIsAnError) {
  TempDir dir;
  for (const char* name : {"x_002.bin", "x_000.bin", "x_001.bin", "y.bin"}) {
    ASSERT_TRUE(WriteShard(dir.File(name), Iota(3)).ok());
  }
  Result<std::vector<std::string>> files = ExpandShardPattern(dir.File("x_*.bin"));
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_EQ(*files, (std::vector<std::string>{dir.File("x_000.bin"), dir.File("x_001.bin"),
                                              dir.File("x_002.bin")}));
  Result<std::vector<std::string>> none = ExpandShardPattern(dir.File("z_*.bin"));
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().message, HasSubstr(dir.File("z_*.bin")));
}

}  // namespace
}  // namespace ablate
