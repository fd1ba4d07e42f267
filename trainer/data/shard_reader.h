// Reading modded-nanogpt / llm.c token shards (DESIGN §6.1): a header of 256 little-endian int32
// (magic 20240520, version 1, token count, then zeros), followed by `token count` uint16 tokens.
// Every check names the file and the byte offset it failed at; nothing here aborts or throws.
#ifndef ABLATE_TRAINER_DATA_SHARD_READER_H_
#define ABLATE_TRAINER_DATA_SHARD_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr int64_t kShardHeaderInts = 256;
inline constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;  // 1024; tokens start here

struct ShardHeader {
  int32_t magic = kShardMagic;
  int32_t version = kShardVersion;
  int64_t num_tokens = 0;  // uint16 tokens after the header
  int64_t file_bytes = 0;  // size of the file on disk (== 1024 + 2 * num_tokens when valid)
};

// Reads and validates the header of `path`: the file exists and is readable, holds at least the
// 1024-byte header, has the magic and version, a non-negative token count, and exactly
// 1024 + 2·count bytes. Errors look like "shard data/x.bin: byte 0: wrong magic 7 (expected
// 20240520)" or "... file has 2048 bytes but the header's token count 700 needs 2424".
Result<ShardHeader> ReadShardHeader(const std::string& path);

// Reads the whole shard (validated as above) with buffered reads. When vocab_size > 0, every
// token must be < vocab_size; the error names the byte offset and value of the first bad token.
Result<std::vector<uint16_t>> ReadShardTokens(const std::string& path, int64_t vocab_size);

// Reads `count` tokens starting at token index `first` (validated header, vocab check as above).
// REQUIRES: first + count <= header.num_tokens, else an error.
Result<std::vector<uint16_t>> ReadShardRange(const std::string& path, int64_t first, int64_t count,
                                             int64_t vocab_size);

// Expands a glob(3) pattern ("data/fineweb_train_*.bin") into a sorted list of paths. A pattern
// with no wildcard that names an existing file yields that file. No match is an error that quotes
// the pattern.
Result<std::vector<std::string>> ExpandShardPattern(const std::string& pattern);

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_SHARD_READER_H_
