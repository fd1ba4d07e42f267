// Coordinator connection and status-to-exit-code mapping.
#include "cli/client.h"

#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/token_file.h"

namespace ablate {
namespace {

constexpr const char* kDefaultServer = "127.0.0.1:7070";
constexpr auto kUnaryDeadline = std::chrono::seconds(60);

std::string Trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

// The token from the environment: ABLATE_TOKEN_FILE names a file holding it (as --token-file),
// ABLATE_TOKEN holds it. Both set is refused: which one was meant cannot be told.
absl::StatusOr<std::string> EnvironmentToken() {
  const char* file = std::getenv("ABLATE_TOKEN_FILE");
  const char* value = std::getenv("ABLATE_TOKEN");
  if (file && *file && value && *value) {
    return absl::InvalidArgumentError(
        "both ABLATE_TOKEN_FILE and ABLATE_TOKEN are set: ABLATE_TOKEN_FILE names a file "
        "holding the client token, ABLATE_TOKEN is the token itself; unset one");
  }
  if (file && *file) return ReadTokenFile(file);
  return value ? Trim(value) : std::string();
}

}  // namespace

std::unique_ptr<Client> Client::Create(const ClientOptions& o, std::string* error) {
  auto c = std::make_unique<Client>();
  c->server_ = o.server;
  if (c->server_.empty()) {
    const char* env = std::getenv("ABLATE_SERVER");
    c->server_ = env && *env ? env : kDefaultServer;
  }
  c->token_ = o.token;
  if (!o.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(o.token_file);
    if (!token.ok()) {
      *error = std::string(token.status().message());
      return nullptr;
    }
    c->token_ = *std::move(token);
  } else if (c->token_.empty()) {
    absl::StatusOr<std::string> token = EnvironmentToken();
    if (!token.ok()) {
      *error = std::string(token.status().message());
      return nullptr;
    }
    c->token_ = *std::move(token);
  }
  c->json_ = o.json;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  std::string ca_file = o.tls_ca;
  if (ca_file.empty()) {
    const char* env = std::getenv("ABLATE_TLS_CA");
    if (env) ca_file = env;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!ca_file.empty()) {
    std::ifstream in(ca_file);
    if (!in) {
      *error = "cannot read TLS CA file " + ca_file;
      return nullptr;
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs.assign(std::istreambuf_iterator<char>(in), {});
    creds = grpc::SslCredentials(ssl);
  }
  c->channel_ = grpc::CreateCustomChannel(c->server_, creds, args);
  c->stub_ = v1::AblateService::NewStub(c->channel_);
  return c;
}

std::unique_ptr<grpc::ClientContext> Client::Context(bool streaming) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  if (!streaming) ctx->set_deadline(std::chrono::system_clock::now() + kUnaryDeadline);
  return ctx;
}

int Client::Fail(const grpc::Status& s, const std::string& what) const {
  std::string msg = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::ALREADY_EXISTS:
      std::cerr << "ablate: " << what << " rejected:\n" << msg << "\n";
      return kExitRejected;
    case grpc::StatusCode::NOT_FOUND:
      std::cerr << "ablate: " << msg << "\n";
      return kExitNotFound;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      std::cerr << "ablate: cannot reach the coordinator at " << server_ << " (" << msg
                << ").\nStart one with `ablate-coordinator` or `ablate up`, or point "
                   "--server / ABLATE_SERVER at it.\n";
      return kExitUnreachable;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      std::cerr << "ablate: the coordinator at " << server_ << " refused the call: " << msg
                << ".\nPass the client token with --token-file F, ABLATE_TOKEN_FILE=F, or "
                   "ABLATE_TOKEN=<the token itself>.\n";
      return kExitUnreachable;
    default:
      std::cerr << "ablate: " << what << " failed: " << msg << "\n";
      return kExitFailure;
  }
}

std::optional<int> Client::Answer(const grpc::Status& status,
                                  const google::protobuf::Message& response,
                                  const std::string& what) const {
  if (!status.ok()) return Fail(status, what);
  if (!json_) return std::nullopt;
  std::cout << ToJson(response) << "\n";
  return kExitOk;
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

}  // namespace ablate
