// NCCL id hand-over between trainer and worker, over the trainer's own id file format.
#include "worker/nccl_handoff.h"

#include <chrono>
#include <filesystem>

#include "trainer/collectives/nccl_id.h"

namespace ablate::worker {

std::string NcclIdPath(const std::string& run_dir) { return run_dir + "/nccl_id"; }

std::vector<std::string> TopologyArgs(const v1::Assignment& a, const std::string& id_path) {
  std::vector<std::string> args;
  if (a.gpus_size() > 1) args = {"--gpus", "0-" + std::to_string(a.gpus_size() - 1)};
  if (a.num_nodes() > 1) {
    args.insert(args.end(), {"--nnodes", std::to_string(a.num_nodes()), "--node-rank",
                             std::to_string(a.node_rank()), "--nccl-id-file", id_path});
  }
  return args;
}

std::optional<v1::NcclId> ReadLocalId(int64_t attempt_id, const std::string& id_path) {
  std::error_code ec;
  if (!std::filesystem::exists(id_path, ec)) return std::nullopt;
  Result<std::string> bytes = ReadNcclIdFile(id_path, std::chrono::milliseconds(0));
  if (!bytes.ok()) return std::nullopt;  // written by rename, so whole or absent
  v1::NcclId id;
  id.set_attempt_id(attempt_id);
  id.set_unique_id(*bytes);
  return id;
}

absl::Status WriteRelayedId(const v1::NcclId& id, const std::string& id_path) {
  if (id.unique_id().size() != kNcclIdBytes) {
    return absl::InvalidArgumentError("NcclId for attempt " + std::to_string(id.attempt_id()) +
                                      " has " + std::to_string(id.unique_id().size()) +
                                      " bytes, not " + std::to_string(kNcclIdBytes));
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(id_path).parent_path(), ec);
  if (ec) return absl::InternalError("create the folder of " + id_path + ": " + ec.message());
  Status s = WriteNcclIdFile(id_path, id.unique_id());
  if (!s.ok()) return absl::InternalError(s.message());
  return absl::OkStatus();
}

}  // namespace ablate::worker
