// The NCCL unique id as it travels between nodes: 128 opaque bytes, written as 256 lowercase
// hex digits in a file (or on stdin). Node rank 0's trainer creates the id and writes the file;
// the worker relays its bytes (NcclId.unique_id) to the other nodes, whose workers write the
// same file for their trainers. Plain C++, no NCCL: the worker links it too.
#ifndef ABLATE_TRAINER_COLLECTIVES_NCCL_ID_H_
#define ABLATE_TRAINER_COLLECTIVES_NCCL_ID_H_

#include <chrono>
#include <string>
#include <string_view>

#include "trainer/config/result.h"

namespace ablate {

inline constexpr size_t kNcclIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

// bytes (kNcclIdBytes) → 256 hex digits.
std::string EncodeNcclId(std::string_view bytes);
// 256 hex digits, surrounding whitespace ignored → kNcclIdBytes bytes. Error: wrong length or
// a non-hex character.
Result<std::string> DecodeNcclId(std::string_view hex);

// Writes the encoded id and a newline to `path` atomically (a temporary file, then rename), so
// a reader never sees half an id. Error: the file system's words.
Status WriteNcclIdFile(const std::string& path, std::string_view bytes);
// Reads and decodes `path`, waiting up to `wait` for it to appear (polling every 100 ms), for
// nodes that start before node 0 has written it to a shared file system. Error: still missing
// after `wait`, unreadable, or not an id.
Result<std::string> ReadNcclIdFile(const std::string& path, std::chrono::milliseconds wait);

}  // namespace ablate

#endif  // ABLATE_TRAINER_COLLECTIVES_NCCL_ID_H_
