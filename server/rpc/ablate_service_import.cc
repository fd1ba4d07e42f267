// ImportLogs (issue 39): the upload in chunks, then server/compare/log_import.h.
#include "absl/strings/str_cat.h"
#include "common/message_limits.h"
#include "server/compare/log_import.h"
#include "server/rpc/ablate_service.h"
#include "server/rpc/grpc_status.h"

namespace ablate {

grpc::Status AblateServiceImpl::ImportLogs(grpc::ServerContext* ctx,
                                           grpc::ServerReader<v1::SubmitSweepChunk>* reader,
                                           v1::ImportLogsResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  std::string bytes;
  v1::SubmitSweepChunk chunk;
  while (reader->Read(&chunk)) {
    if (bytes.size() + chunk.data().size() > kMaxUploadBytes) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("the import is over ", kMaxUploadBytes,
                                       " bytes (96 MiB); import its logs in several calls"));
    }
    bytes += chunk.data();
  }
  v1::ImportLogsRequest req;
  if (!req.ParseFromString(bytes)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the uploaded bytes are not an ImportLogsRequest");
  }
  bytes = std::string();
  return ToGrpc(ImportRecordLogs(*store_, req, resp));
}

}  // namespace ablate
