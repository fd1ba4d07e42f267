// SHA-256 of a byte string, as lowercase hex. Used for config hashes; the trainer cannot assume
// OpenSSL on GPU machines, and the algorithm (FIPS 180-4) is short.
#ifndef ABLATE_TRAINER_CONFIG_SHA256_H_
#define ABLATE_TRAINER_CONFIG_SHA256_H_

#include <string>
#include <string_view>

namespace ablate {

std::string Sha256Hex(std::string_view data);

}  // namespace ablate

#endif  // ABLATE_TRAINER_CONFIG_SHA256_H_
