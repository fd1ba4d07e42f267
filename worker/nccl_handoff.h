// What the worker adds for runs on several GPUs or nodes: the trainer's topology arguments and
// the hand-over of the NCCL unique id. Node rank 0's trainer writes the id to its run folder;
// the worker sends it to the coordinator (NcclId), which relays it to the other nodes' workers,
// which write it to their run folders, where their trainers wait for it (ablate-train
// --nccl-id-file). Plain functions over files; no gRPC.
#ifndef ABLATE_WORKER_NCCL_HANDOFF_H_
#define ABLATE_WORKER_NCCL_HANDOFF_H_

#include <optional>
#include <string>
#include <vector>

#include "ablate/v1/worker.pb.h"
#include "absl/status/status.h"

namespace ablate::worker {

// Where the attempt's trainer finds (node 0: writes) the NCCL id.
std::string NcclIdPath(const std::string& run_dir);

// Arguments for the trainer: --gpus 0-(n−1) when the attempt has several GPUs (CUDA renumbers
// them under CUDA_VISIBLE_DEVICES), and for a multi-node attempt --nnodes, --node-rank and
// --nccl-id-file id_path. Empty for one GPU or a CPU run.
std::vector<std::string> TopologyArgs(const v1::Assignment& a, const std::string& id_path);

// Node rank 0: the NcclId message for `attempt_id` once its trainer has written a whole id to
// id_path; nullopt before that.
std::optional<v1::NcclId> ReadLocalId(int64_t attempt_id, const std::string& id_path);

// Other nodes: writes the relayed id where the trainer waits for it (creating the folder).
// Errors: not an id (wrong size), the file system's.
absl::Status WriteRelayedId(const v1::NcclId& id, const std::string& id_path);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_NCCL_HANDOFF_H_
