// Collectives between the ranks of one training run. The CPU backend runs ranks as threads of
// one process (InProcessCommunicator); NCCL comes behind the same interface. Every rank must
// call the same collectives in the same order with the same sizes. A communicator whose ranks
// hold their data on GPUs (NCCL) also offers DeviceCollectives, queued on a CUDA stream.
#ifndef ABLATE_TRAINER_COLLECTIVES_COMMUNICATOR_H_
#define ABLATE_TRAINER_COLLECTIVES_COMMUNICATOR_H_

#include <cstdint>
#include <span>

#include "trainer/config/result.h"

namespace ablate {

enum class ReduceOp { kSum, kAvg };

// Element type of a device-side collective.
enum class WireType { kF32, kBf16 };

// Collectives on device memory of the rank's GPU, queued on stream() and asynchronous: they
// return once queued. The caller orders its own streams against stream() with CUDA events (the
// dist layer includes no CUDA header, hence void*). Same ordering rule as Communicator: every
// rank queues the same collectives in the same order, interleaved the same way with the host
// collectives below, which run on the same stream. Errors: NCCL's, translated in one place.
class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  virtual void* stream() const = 0;  // cudaStream_t
  // data (n) = reduction over ranks of data (n), in place.
  virtual Status AllReduce(void* data, int64_t n, WireType type, ReduceOp op) = 0;
  // recv (n) = reduction over ranks of send[rank·n, (rank+1)·n).
  virtual Status ReduceScatter(const void* send, void* recv, int64_t n, WireType type,
                               ReduceOp op) = 0;
  // recv (world·n): rank r's send (n) lands at [r·n, (r+1)·n).
  virtual Status AllGather(const void* send, void* recv, int64_t n, WireType type) = 0;
  // An error once the group is broken (NCCL's asynchronous error: a peer died, a connection
  // broke). Cheap; for host waits to poll, since queued collectives never finish then.
  virtual Status Health() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // data (n) = reduction over ranks of data (n), in place; identical on every rank.
  virtual Status AllReduce(std::span<float> data, ReduceOp op) = 0;
  // recv (n) = reduction over ranks of send[rank·n, (rank+1)·n); send has world·n elements.
  virtual Status ReduceScatter(std::span<const float> send, std::span<float> recv, ReduceOp op) = 0;
  // recv (world·n): rank r's send (n) lands at [r·n, (r+1)·n).
  virtual Status AllGather(std::span<const float> send, std::span<float> recv) = 0;
  // data (n) = root's data on every rank.
  virtual Status Broadcast(std::span<float> data, int root) = 0;

  // The device-side collectives, or nullptr when the ranks do not share GPU memory (the CPU's
  // in-process communicator). Owned by the communicator.
  virtual DeviceCollectives* device() { return nullptr; }

  // After this rank failed on its own (not by a decision all ranks took together): lets the
  // rank's resources go without waiting for peers that will never answer. NCCL aborts the
  // communicator; the in-process one has nothing queued, so it does nothing. Later calls fail.
  virtual void Abort() {}
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_COLLECTIVES_COMMUNICATOR_H_
