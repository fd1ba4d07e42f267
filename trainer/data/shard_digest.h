// SHA-256 of shard bytes for manifests. Shards are 200 MB, so this uses OpenSSL's libcrypto
// (SHA instructions where the CPU has them) when the build found it, and the portable
// trainer/config/sha256.h otherwise (a GPU box with only a compiler). Both give the same digest.
#ifndef ABLATE_TRAINER_DATA_SHARD_DIGEST_H_
#define ABLATE_TRAINER_DATA_SHARD_DIGEST_H_

#include <string>
#include <string_view>

namespace ablate {

// Lowercase hex SHA-256 of `bytes`. Thread-safe.
std::string ShardSha256Hex(std::string_view bytes);

// "openssl" or "portable": which implementation this build uses.
std::string_view ShardSha256Backend();

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_SHARD_DIGEST_H_
