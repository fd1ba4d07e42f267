// Fuzz target: a token shard file (header, size, tokens against the vocabulary) as the trainer,
// the worker and ablate-data read it. The input is written to a file in a private temp folder.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "trainer/data/shard_reader.h"

namespace {

const std::string& ShardPath() {
  static const std::string path = [] {
    std::string dir = "/tmp/ablate-fuzz-shard.XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) std::abort();
    return dir + "/fuzz.bin";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(ShardPath(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto header = ablate::ReadShardHeader(ShardPath());
  if (!header.ok()) return 0;
  ablate::ReadShardTokens(ShardPath(), 50257).ok();
  if (header->num_tokens >= 2) ablate::ReadShardRange(ShardPath(), 1, 1, 50257).ok();
  return 0;
}
