// ShardSha256Hex without OpenSSL: the trainer's own FIPS 180-4 implementation.
#include "trainer/config/sha256.h"
#include "trainer/data/shard_digest.h"

namespace ablate {

std::string ShardSha256Hex(std::string_view bytes) { return Sha256Hex(bytes); }

std::string_view ShardSha256Backend() { return "portable"; }

}  // namespace ablate
