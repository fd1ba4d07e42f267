// Bearer-token checks.
#include "server/rpc/token_auth.h"

namespace ablate {
namespace {

// Compares without an early exit, so the time taken does not reveal the matching prefix.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % (b.empty() ? 1 : b.size())];
  return diff == 0 && !b.empty();
}

}  // namespace

grpc::Status TokenAuth::Check(const grpc::ServerContextBase& ctx, const std::string& expected,
                              const char* who) {
  if (expected.empty()) return grpc::Status::OK;
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string("missing ") + who + " token (authorization metadata)");
  }
  std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "Bearer ";
  if (value.substr(0, kBearer.size()) == kBearer) value.remove_prefix(kBearer.size());
  if (!ConstantTimeEquals(value, expected)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string("wrong ") + who + " token");
  }
  return grpc::Status::OK;
}

grpc::Status TokenAuth::CheckClient(const grpc::ServerContextBase& ctx) const {
  return Check(ctx, client_token_, "client");
}

grpc::Status TokenAuth::CheckWorker(const grpc::ServerContextBase& ctx) const {
  return Check(ctx, worker_token_, "worker");
}

}  // namespace ablate
