// Shard writing: header, tokens, fsync-free write to a temporary name, then rename(2).
#include "trainer/data/shard_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "trainer/data/shard_reader.h"

namespace ablate {

Status WriteShard(const std::string& path, std::span<const uint16_t> tokens) {
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Error{"shard " + path + ": " + std::to_string(tokens.size()) +
                     " tokens do not fit the header's int32 count",
                 ""};
  }
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Error{"cannot create " + tmp + ": " + std::strerror(errno), ""};
  bool ok = std::fwrite(header, sizeof(header), 1, f) == 1 &&
            std::fwrite(tokens.data(), 2, tokens.size(), f) == tokens.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return Error{"cannot write " + tmp + ": " + std::strerror(errno), ""};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Error{"cannot rename " + tmp + " to " + path + ": " + std::strerror(errno), ""};
  }
  return Status();
}

}  // namespace ablate
