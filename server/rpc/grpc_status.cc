// absl::Status -> grpc::Status; see grpc_status.h.
#include "server/rpc/grpc_status.h"

#include <string>

namespace ablate {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  // absl::StatusCode values are gRPC's codes by construction.
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace ablate
