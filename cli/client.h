// The CLI's connection to a coordinator: server address, token, output mode, and the mapping
// from gRPC status codes to the CLI's exit codes.
#ifndef ABLATE_CLI_CLIENT_H_
#define ABLATE_CLI_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "ablate/v1/client.grpc.pb.h"

namespace ablate {

// Exit codes of `ablate` (documented in --help).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,      // the command ran but its subject failed (e.g. a watched sweep failed)
  kExitUsage = 2,        // bad command line
  kExitRejected = 3,     // the server (or the CLI) rejected the input
  kExitNotFound = 4,     // unknown sweep or run id
  kExitUnreachable = 5,  // server unreachable, or token missing/wrong
  kExitInterrupted = 130,
};

struct ClientOptions {
  std::string server;      // HOST:PORT
  std::string token_file;  // overrides token
  std::string token;
  std::string tls_ca;  // PEM CA file: connect with TLS (or ABLATE_TLS_CA)
  bool json = false;
};

class Client {
 public:
  // Resolves server and token from the options and the environment: ABLATE_SERVER; the token from
  // --token-file, else ABLATE_TOKEN_FILE (a file holding it), else ABLATE_TOKEN (the token
  // itself). Fails with a message when the token file cannot be read or both variables are set.
  static std::unique_ptr<Client> Create(const ClientOptions& options, std::string* error);

  v1::AblateService::Stub& stub() { return *stub_; }
  // A context carrying the token and, for unary calls, a deadline.
  std::unique_ptr<grpc::ClientContext> Context(bool streaming = false) const;
  bool json() const { return json_; }
  const std::string& server() const { return server_; }

  // Prints a failed call's status to stderr and returns the matching exit code.
  int Fail(const grpc::Status& status, const std::string& what) const;

  // The end of a unary call, as every command handles it: a failed call prints its status (Fail)
  // and gives its exit code; with --json the response is printed as one line of JSON and kExitOk
  // comes back; otherwise nullopt, and the command goes on to print its table. `what` names the
  // subject in an error ("listing sweeps", "sweep 3").
  std::optional<int> Answer(const grpc::Status& status, const google::protobuf::Message& response,
                            const std::string& what) const;

  // Makes the unary call `method` with a fresh Context() and ends it as Answer does:
  //   if (std::optional<int> done = c.Call(&Stub::ListSweeps, req, &resp, "listing sweeps"))
  //     return *done;
  using Stub = v1::AblateService::Stub;
  template <class Request, class Response>
  std::optional<int> Call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                                       Response*),
                          const Request& request, Response* response, const std::string& what) {
    return Answer((stub_.get()->*method)(Context().get(), request, response), *response, what);
  }

 private:
  std::string server_;
  std::string token_;
  bool json_ = false;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AblateService::Stub> stub_;
};

// Protobuf message as JSON text (proto field names, defaults included).
std::string ToJson(const google::protobuf::Message& m);

}  // namespace ablate

#endif  // ABLATE_CLI_CLIENT_H_
