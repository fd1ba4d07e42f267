// ShardSha256Hex over OpenSSL's one-shot SHA256 (libcrypto picks SHA-NI / AVX2 code at run time).
#include <openssl/sha.h>

#include "trainer/data/shard_digest.h"

namespace ablate {

std::string ShardSha256Hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : digest) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

std::string_view ShardSha256Backend() { return "openssl"; }

}  // namespace ablate
