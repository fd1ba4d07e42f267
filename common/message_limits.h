// Sizes of gRPC messages the coordinator accepts (issue 24): every message is at most
// kMaxMessageBytes, applied by gRPC before a handler (and so before the token check) runs; only
// AblateService.UploadSweep takes more, in chunks, and only after checking the client token.
#ifndef ABLATE_COMMON_MESSAGE_LIMITS_H_
#define ABLATE_COMMON_MESSAGE_LIMITS_H_

#include <cstddef>

namespace ablate {

// The coordinator's receive limit for every message, on every method.
inline constexpr size_t kMaxMessageBytes = size_t{4} << 20;
// One UploadSweep chunk (the CLI's size; any chunk up to kMaxMessageBytes is read).
inline constexpr size_t kUploadChunkBytes = size_t{1} << 20;
// A whole UploadSweep request: the spec (1 MiB) and its scripts' snapshots (16 MB each).
inline constexpr size_t kMaxUploadBytes = size_t{96} << 20;

// The gRPC transport's memory quota (--grpc-buffer-mib): gRPC 1.51 buffers a whole message
// before comparing it with kMaxMessageBytes, so a caller without a token could otherwise make it
// hold ~90 MB per call; under the quota such streams are reset instead.
inline constexpr size_t kGrpcBufferBytes = size_t{32} << 20;

}  // namespace ablate

#endif  // ABLATE_COMMON_MESSAGE_LIMITS_H_
