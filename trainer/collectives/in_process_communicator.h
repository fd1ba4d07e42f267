// Ranks as threads of one process: collectives meet at a shared barrier and read each other's
// buffers directly. Reductions add ranks in order 0..W−1, so every rank gets bit-identical sums.
#ifndef ABLATE_TRAINER_COLLECTIVES_IN_PROCESS_COMMUNICATOR_H_
#define ABLATE_TRAINER_COLLECTIVES_IN_PROCESS_COMMUNICATOR_H_

#include <barrier>
#include <memory>
#include <vector>

#include "trainer/collectives/communicator.h"

namespace ablate {

// Shared state of one group of `world` ranks. Thread-safe; outlives its communicators.
class InProcessGroup {
 public:
  explicit InProcessGroup(int world);
  int world() const { return world_; }

 private:
  friend class InProcessCommunicator;
  int world_;
  std::barrier<> barrier_;
  std::vector<const float*> published_;  // (world) one buffer per rank during a collective
};

// One rank's handle. Use from that rank's thread only.
class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(InProcessGroup* group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return group_->world(); }
  Status AllReduce(std::span<float> data, ReduceOp op) override;
  Status ReduceScatter(std::span<const float> send, std::span<float> recv, ReduceOp op) override;
  Status AllGather(std::span<const float> send, std::span<float> recv) override;
  Status Broadcast(std::span<float> data, int root) override;

 private:
  // Publishes `buf`, waits for all ranks, runs read(), waits again (readers done).
  template <class Fn>
  void Exchange(const float* buf, const Fn& read);
  // out (n) = reduction of published[r] + offset over ranks.
  void Reduce(float* out, int64_t offset, int64_t n, ReduceOp op) const;

  InProcessGroup* group_;
  int rank_;
  std::vector<float> scratch_;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_COLLECTIVES_IN_PROCESS_COMMUNICATOR_H_
