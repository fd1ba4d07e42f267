// Writing token shards in the modded-nanogpt / llm.c format (see shard_reader.h).
#ifndef ABLATE_TRAINER_DATA_SHARD_WRITER_H_
#define ABLATE_TRAINER_DATA_SHARD_WRITER_H_

#include <cstdint>
#include <span>
#include <string>

#include "trainer/config/result.h"

namespace ablate {

// Writes `tokens` to `path` as one shard. The bytes go to `path + ".tmp"` first and are renamed
// into place, so a reader never sees a half-written shard. Errors name the path and the cause.
Status WriteShard(const std::string& path, std::span<const uint16_t> tokens);

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_SHARD_WRITER_H_
