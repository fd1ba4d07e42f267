// Generated GPT-2-like token shards for the fetch tests: the file bytes of a valid shard.
#ifndef ABLATE_TESTS_DATA_SHARD_BYTES_H_
#define ABLATE_TESTS_DATA_SHARD_BYTES_H_

#include <cstdint>
#include <cstring>
#include <string>

#include "trainer/data/shard_reader.h"

namespace ablate::testing {

// A valid shard of `tokens` pseudo-random tokens below 50257, different for each `seed`.
inline std::string ShardBytes(int64_t tokens, uint32_t seed) {
  std::string bytes(static_cast<size_t>(kShardHeaderBytes + 2 * tokens), '\0');
  int32_t header[3] = {kShardMagic, kShardVersion, static_cast<int32_t>(tokens)};
  std::memcpy(bytes.data(), header, sizeof(header));
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < tokens; ++i) {
    state = state * 1664525u + 1013904223u;
    uint16_t t = static_cast<uint16_t>((state >> 8) % 50257);
    std::memcpy(bytes.data() + kShardHeaderBytes + 2 * i, &t, 2);
  }
  return bytes;
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_DATA_SHARD_BYTES_H_
