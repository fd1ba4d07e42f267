// Communicator over NCCL: one rank per GPU, one host thread per rank, any number of processes
// (one per node). Every collective, host or device, is queued on the rank's own communication
// stream, so the ordering rule of communicator.h holds for both kinds together. Host
// collectives (the validation loss, start-up exchanges) stage through a small device buffer and
// wait for their result, polling so that a failed peer cannot hang them; device collectives
// return once queued.
#ifndef ABLATE_TRAINER_COLLECTIVES_NCCL_COMMUNICATOR_H_
#define ABLATE_TRAINER_COLLECTIVES_NCCL_COMMUNICATOR_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "trainer/cuda/device_buffer.h"
#include "trainer/collectives/communicator.h"
#include "trainer/collectives/nccl_library.h"

namespace ablate {

// One rank's handle. Used by one thread at a time, which must have made the handle's device
// current (cudaSetDevice); the rank's engine does that. Each rank's handle is independent.
class NcclCommunicator : public Communicator, public DeviceCollectives {
 public:
  // This process's ranks first_rank .. first_rank + devices.size() − 1 of `world`, rank
  // first_rank + j on devices[j], joined to group `id` (kNcclIdBytes bytes) in one NCCL group
  // call from the calling thread, as NCCL wants for one thread driving several GPUs. Creates a
  // non-blocking stream on each device. Blocks until every rank of every process has joined
  // (NCCL's rule: a process that never joins leaves the others waiting). Errors: CUDA's (no such
  // device) or NCCL's. lib must outlive the communicators; so must abort (optional): once it is
  // set, host collectives stop waiting and fail.
  static Result<std::vector<std::unique_ptr<NcclCommunicator>>> CreateLocal(
      const NcclLibrary& lib, const std::string& id, int world, int first_rank,
      const std::vector<int>& devices, const std::atomic<bool>* abort = nullptr);
  // Destroys them all at once, each on a thread of its own: ncclCommDestroy may wait for the
  // node's other ranks (an intra-node collective), so one thread destroying them one after the
  // other could hang. Leaves `comms` empty.
  static void DestroyAll(std::vector<std::unique_ptr<NcclCommunicator>>& comms);
  // Waits for the stream, then ncclCommDestroy; ncclCommAbort instead after a failed call, so a
  // broken group does not hang the process on its way out. Several ranks of one process: use
  // DestroyAll.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  Status AllReduce(std::span<float> data, ReduceOp op) override;
  Status ReduceScatter(std::span<const float> send, std::span<float> recv, ReduceOp op) override;
  Status AllGather(std::span<const float> send, std::span<float> recv) override;
  Status Broadcast(std::span<float> data, int root) override;
  DeviceCollectives* device() override { return this; }
  // ncclCommAbort: NCCL's kernels of this rank stop waiting for peers, so the rank's streams
  // drain and its memory can be freed. Later calls fail. Idempotent.
  void Abort() override;
  Status Health() override;

  void* stream() const override { return stream_; }
  Status AllReduce(void* data, int64_t n, WireType type, ReduceOp op) override;
  Status ReduceScatter(const void* send, void* recv, int64_t n, WireType type,
                       ReduceOp op) override;
  Status AllGather(const void* send, void* recv, int64_t n, WireType type) override;

 private:
  NcclCommunicator(const NcclLibrary& lib, int world, int rank, int device)
      : api_(lib.api()), world_(world), rank_(rank), device_(device) {}
  // Grows the staging buffer to n floats and copies host (n) into it.
  Status Stage(const float* host, int64_t n);
  // host (n) ← staging, then waits for the stream.
  Status Unstage(float* host, int64_t n);
  // Polls the stream until it is idle; fails on an asynchronous NCCL error (a peer's broken
  // connection) or once abort_ is set.
  Status WaitStream();
  // An error once abort_ is set: a collective then must not be started.
  Status CheckNotAborted() const;
  // Records a failure (the destructor then aborts) and passes the status on.
  Status Track(Status s);

  const NcclApi& api_;
  int world_, rank_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  const std::atomic<bool>* abort_ = nullptr;
  cuda::DeviceBuffer<float> staging_;
  bool failed_ = false;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_COLLECTIVES_NCCL_COMMUNICATOR_H_
