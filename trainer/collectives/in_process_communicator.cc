// In-process collectives: publish, barrier, read peers, barrier.
#include "trainer/collectives/in_process_communicator.h"

#include <algorithm>

namespace ablate {

InProcessGroup::InProcessGroup(int world) : world_(world), barrier_(world), published_(world) {}

template <class Fn>
void InProcessCommunicator::Exchange(const float* buf, const Fn& read) {
  group_->published_[rank_] = buf;
  group_->barrier_.arrive_and_wait();
  read();
  group_->barrier_.arrive_and_wait();
}

void InProcessCommunicator::Reduce(float* out, int64_t offset, int64_t n, ReduceOp op) const {
  int world = group_->world();
  std::copy_n(group_->published_[0] + offset, n, out);
  for (int r = 1; r < world; ++r) {
    const float* src = group_->published_[r] + offset;
    for (int64_t i = 0; i < n; ++i) out[i] += src[i];
  }
  if (op == ReduceOp::kAvg) {
    for (int64_t i = 0; i < n; ++i) out[i] /= float(world);
  }
}

Status InProcessCommunicator::AllReduce(std::span<float> data, ReduceOp op) {
  scratch_.resize(data.size());
  Exchange(data.data(), [&] { Reduce(scratch_.data(), 0, int64_t(data.size()), op); });
  std::copy(scratch_.begin(), scratch_.end(), data.begin());
  return {};
}

Status InProcessCommunicator::ReduceScatter(std::span<const float> send, std::span<float> recv,
                                            ReduceOp op) {
  if (send.size() != recv.size() * size_t(world_size())) {
    return Error{"ReduceScatter: send must hold world_size × recv elements", ""};
  }
  int64_t n = int64_t(recv.size());
  Exchange(send.data(), [&] { Reduce(recv.data(), rank_ * n, n, op); });
  return {};
}

Status InProcessCommunicator::AllGather(std::span<const float> send, std::span<float> recv) {
  if (recv.size() != send.size() * size_t(world_size())) {
    return Error{"AllGather: recv must hold world_size × send elements", ""};
  }
  size_t n = send.size();
  Exchange(send.data(), [&] {
    for (int r = 0; r < world_size(); ++r) {
      std::copy_n(group_->published_[r], n, recv.data() + r * n);
    }
  });
  return {};
}

Status InProcessCommunicator::Broadcast(std::span<float> data, int root) {
  scratch_.resize(data.size());
  Exchange(data.data(), [&] { std::copy_n(group_->published_[root], data.size(), scratch_.data()); });
  std::copy(scratch_.begin(), scratch_.end(), data.begin());
  return {};
}

}  // namespace ablate
