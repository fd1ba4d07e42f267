// ListPools (issue 15): what the pools loop last saw, from the list_pools hook.
#include "server/rpc/ablate_service.h"

namespace ablate {

grpc::Status AblateServiceImpl::ListPools(grpc::ServerContext* ctx, const v1::ListPoolsRequest*,
                                          v1::ListPoolsResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  if (!hooks_.list_pools) return grpc::Status::OK;
  for (v1::Pool& p : hooks_.list_pools()) *resp->add_pools() = std::move(p);
  return grpc::Status::OK;
}

}  // namespace ablate
