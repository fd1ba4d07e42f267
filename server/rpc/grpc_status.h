// absl::Status -> grpc::Status at the RPC boundary: abseil's codes are gRPC's codes, so the code
// passes unchanged and the message with it.
#ifndef ABLATE_SERVER_RPC_GRPC_STATUS_H_
#define ABLATE_SERVER_RPC_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace ablate {

grpc::Status ToGrpc(const absl::Status& s);

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_GRPC_STATUS_H_
