// Bearer-token checks for the two kinds of callers (DESIGN §4): clients and workers present
// `authorization: Bearer <token>` in gRPC metadata. An empty expected token disables the check.
// Thread-safe (immutable after construction).
#ifndef ABLATE_SERVER_RPC_TOKEN_AUTH_H_
#define ABLATE_SERVER_RPC_TOKEN_AUTH_H_

#include <grpcpp/server_context.h>

#include <string>

namespace ablate {

class TokenAuth {
 public:
  TokenAuth(std::string client_token, std::string worker_token)
      : client_token_(std::move(client_token)), worker_token_(std::move(worker_token)) {}

  // OK, or UNAUTHENTICATED with a message that says which token is missing or wrong.
  grpc::Status CheckClient(const grpc::ServerContextBase& ctx) const;
  grpc::Status CheckWorker(const grpc::ServerContextBase& ctx) const;

 private:
  static grpc::Status Check(const grpc::ServerContextBase& ctx, const std::string& expected,
                            const char* who);
  const std::string client_token_;
  const std::string worker_token_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_TOKEN_AUTH_H_
