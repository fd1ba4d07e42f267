// Collectives between the ranks of one training run. The CPU backend runs ranks as threads of
// one process (InProcessCommunicator); NCCL comes behind the same interface. Every rank must
// call the same collectives in the same order with the same sizes.
#ifndef ABLATE_TRAINER_DIST_COMMUNICATOR_H_
#define ABLATE_TRAINER_DIST_COMMUNICATOR_H_

#include <span>

#include "trainer/config/result.h"

namespace ablate {

enum class ReduceOp { kSum, kAvg };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // data (n) = reduction over ranks of data (n), in place; identical on every rank.
  virtual Status AllReduce(std::span<float> data, ReduceOp op) = 0;
  // recv (n) = reduction over ranks of send[rank·n, (rank+1)·n); send has world·n elements.
  virtual Status ReduceScatter(std::span<const float> send, std::span<float> recv,
                               ReduceOp op) = 0;
  // recv (world·n): rank r's send (n) lands at [r·n, (r+1)·n).
  virtual Status AllGather(std::span<const float> send, std::span<float> recv) = 0;
  // data (n) = root's data on every rank.
  virtual Status Broadcast(std::span<float> data, int root) = 0;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_DIST_COMMUNICATOR_H_
