// ListPools (issue 15): what the pools loop last saw, from the list_pools hook; PoolAction
// (issue 38): drain, release or resume an ssh pool's hosts, through the pool_action hook.
#include "server/rpc/ablate_service.h"

namespace ablate {

grpc::Status AblateServiceImpl::ListPools(grpc::ServerContext* ctx, const v1::ListPoolsRequest*,
                                          v1::ListPoolsResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  if (!hooks_.list_pools) return grpc::Status::OK;
  for (v1::Pool& p : hooks_.list_pools()) *resp->add_pools() = std::move(p);
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::PoolAction(grpc::ServerContext* ctx,
                                           const v1::PoolActionRequest* req,
                                           v1::PoolActionResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  if (req->pool().size() > 200 || req->host().size() > 400) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pool or host name too long");
  }
  if (req->action() != "drain" && req->action() != "release" && req->action() != "resume") {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "unknown pool action; use drain, release or resume");
  }
  if (!hooks_.pool_action) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this coordinator has no pools (ablate-coordinator --pools FILE)");
  }
  absl::StatusOr<std::string> done = hooks_.pool_action(req->pool(), req->host(), req->action());
  if (!done.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(done.status().code()),
                        std::string(done.status().message()));
  }
  resp->set_message(*done);
  return grpc::Status::OK;
}

}  // namespace ablate
