// NcclCommunicator: group setup, host collectives through a staging buffer, device collectives
// as plain NCCL calls on the communication stream.
#include "trainer/collectives/nccl_communicator.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "trainer/cuda/cuda_check.h"
#include "trainer/collectives/nccl_check.h"
#include "trainer/collectives/nccl_id.h"

namespace ablate {
namespace {

ncclRedOp_t ToNccl(ReduceOp op) { return op == ReduceOp::kAvg ? ncclAvg : ncclSum; }
ncclDataType_t ToNccl(WireType t) { return t == WireType::kBf16 ? ncclBfloat16 : ncclFloat32; }

}  // namespace

Result<std::vector<std::unique_ptr<NcclCommunicator>>> NcclCommunicator::CreateLocal(
    const NcclLibrary& lib, const std::string& id, int world, int first_rank,
    const std::vector<int>& devices, const std::atomic<bool>* abort) {
  if (id.size() != kNcclIdBytes) return Error{"an NCCL id is 128 bytes", "nccl_id"};
  std::vector<std::unique_ptr<NcclCommunicator>> comms;
  for (size_t j = 0; j < devices.size(); ++j) {
    comms.emplace_back(new NcclCommunicator(lib, world, first_rank + int(j), devices[j]));
    comms.back()->abort_ = abort;
    ABLATE_CUDA_CHECK(cudaSetDevice(devices[j]));
    ABLATE_CUDA_CHECK(cudaStreamCreateWithFlags(&comms.back()->stream_, cudaStreamNonBlocking));
  }
  ncclUniqueId unique;
  std::memcpy(unique.internal, id.data(), kNcclIdBytes);
  const NcclApi& api = lib.api();
  ABLATE_NCCL_CHECK(api, api.GroupStart());
  Status joined;
  for (std::unique_ptr<NcclCommunicator>& c : comms) {
    cudaError_t e = cudaSetDevice(c->device_);
    if (e != cudaSuccess) {
      joined = cuda::CudaError(e, "cudaSetDevice", __FILE__, __LINE__);
      break;
    }
    joined = NcclStatus(&api, api.CommInitRank(&c->comm_, world, unique, c->rank_),
                        "ncclCommInitRank", __FILE__, __LINE__);
    if (!joined.ok()) break;
  }
  Status ended =
      NcclStatus(&api, api.GroupEnd(), "ncclGroupEnd (joining the group)", __FILE__, __LINE__);
  if (!joined.ok() || !ended.ok()) {
    for (std::unique_ptr<NcclCommunicator>& c : comms) c->failed_ = true;  // abort, not destroy
    return joined.ok() ? ended.error() : joined.error();
  }
  return comms;
}

void NcclCommunicator::DestroyAll(std::vector<std::unique_ptr<NcclCommunicator>>& comms) {
  std::vector<std::thread> threads;
  for (std::unique_ptr<NcclCommunicator>& c : comms) threads.emplace_back([&c] { c.reset(); });
  for (std::thread& t : threads) t.join();
  comms.clear();
}

NcclCommunicator::~NcclCommunicator() {
  // Teardown errors have no one to go to.
  (void)cudaSetDevice(device_);
  if (stream_ != nullptr && !failed_) (void)cudaStreamSynchronize(stream_);
  if (comm_ != nullptr) {
    ncclResult_t async = ncclSuccess;
    (void)api_.CommGetAsyncError(comm_, &async);
    if (failed_ || async != ncclSuccess) {
      (void)api_.CommAbort(comm_);
    } else {
      (void)api_.CommDestroy(comm_);
    }
  }
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Status NcclCommunicator::Track(Status s) {
  if (!s.ok()) failed_ = true;
  return s;
}

Status NcclCommunicator::Stage(const float* host, int64_t n) {
  if (staging_.size() < n) {
    ABLATE_RETURN_IF_ERROR(staging_.Allocate(n, "the communicator's staging buffer"));
  }
  if (n == 0) return {};
  ABLATE_CUDA_CHECK(cudaMemcpyAsync(staging_.get(), host, size_t(n) * sizeof(float),
                                    cudaMemcpyHostToDevice, stream_));
  return {};
}

// A copy into pageable memory returns only once it is done, so the stream is drained first by
// polling (the collective may wait for a peer that will not come); the copy then cannot block.
Status NcclCommunicator::Unstage(float* host, int64_t n) {
  ABLATE_RETURN_IF_ERROR(WaitStream());
  if (n > 0) {
    ABLATE_CUDA_CHECK(cudaMemcpyAsync(host, staging_.get(), size_t(n) * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_));
  }
  return WaitStream();
}

Status NcclCommunicator::CheckNotAborted() const {
  if (abort_ != nullptr && abort_->load(std::memory_order_relaxed)) {
    return Error{"rank " + std::to_string(rank_) +
                     " stopped before a collective: another rank of this run failed",
                 ""};
  }
  return {};
}

Status NcclCommunicator::Health() {
  ncclResult_t async = ncclSuccess;
  ABLATE_NCCL_CHECK(api_, api_.CommGetAsyncError(comm_, &async));
  if (async != ncclSuccess) {
    return Track(NcclStatus(&api_, async, "NCCL (asynchronous error, a peer may have failed)",
                            __FILE__, __LINE__));
  }
  return {};
}

Status NcclCommunicator::WaitStream() {
  for (int polls = 0;; ++polls) {
    cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return {};
    if (e != cudaErrorNotReady) return cuda::CudaError(e, "cudaStreamQuery", __FILE__, __LINE__);
    if (polls % 256 == 0) ABLATE_RETURN_IF_ERROR(Health());
    if (abort_ != nullptr && abort_->load(std::memory_order_relaxed)) {
      return Error{"rank " + std::to_string(rank_) +
                       " stopped waiting for a collective: another rank of this run failed",
                   ""};
    }
    if (polls < 2000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

void NcclCommunicator::Abort() {
  failed_ = true;
  if (comm_ == nullptr) return;
  (void)cudaSetDevice(device_);
  (void)api_.CommAbort(comm_);  // nothing useful to do with a failed abort
  comm_ = nullptr;
}

// The host collectives below use staging_ as the one device buffer; NCCL allows in-place
// all-reduce, reduce-scatter (recv at send + rank·n) and all-gather (send at recv + rank·n).
Status NcclCommunicator::AllReduce(std::span<float> data, ReduceOp op) {
  ABLATE_RETURN_IF_ERROR(CheckNotAborted());
  int64_t n = int64_t(data.size());
  ABLATE_RETURN_IF_ERROR(Track(Stage(data.data(), n)));
  ABLATE_RETURN_IF_ERROR(Track(AllReduce(staging_.get(), n, WireType::kF32, op)));
  return Track(Unstage(data.data(), n));
}

Status NcclCommunicator::ReduceScatter(std::span<const float> send, std::span<float> recv,
                                       ReduceOp op) {
  if (send.size() != recv.size() * size_t(world_)) {
    return Error{"ReduceScatter: send must hold world_size × recv elements", ""};
  }
  ABLATE_RETURN_IF_ERROR(CheckNotAborted());
  int64_t n = int64_t(recv.size());
  ABLATE_RETURN_IF_ERROR(Track(Stage(send.data(), int64_t(send.size()))));
  float* mine = staging_.get() + int64_t(rank_) * n;
  ABLATE_RETURN_IF_ERROR(Track(ReduceScatter(staging_.get(), mine, n, WireType::kF32, op)));
  ABLATE_RETURN_IF_ERROR(Track(WaitStream()));
  if (n > 0) {
    ABLATE_CUDA_CHECK(cudaMemcpyAsync(recv.data(), mine, size_t(n) * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_));
  }
  return Track(WaitStream());
}

Status NcclCommunicator::AllGather(std::span<const float> send, std::span<float> recv) {
  if (recv.size() != send.size() * size_t(world_)) {
    return Error{"AllGather: recv must hold world_size × send elements", ""};
  }
  ABLATE_RETURN_IF_ERROR(CheckNotAborted());
  int64_t n = int64_t(send.size());
  if (staging_.size() < int64_t(recv.size())) {
    ABLATE_RETURN_IF_ERROR(
        Track(staging_.Allocate(int64_t(recv.size()), "the communicator's staging buffer")));
  }
  float* mine = staging_.get() + int64_t(rank_) * n;
  if (n > 0) {
    ABLATE_CUDA_CHECK(cudaMemcpyAsync(mine, send.data(), size_t(n) * sizeof(float),
                                      cudaMemcpyHostToDevice, stream_));
  }
  ABLATE_RETURN_IF_ERROR(Track(AllGather(mine, staging_.get(), n, WireType::kF32)));
  return Track(Unstage(recv.data(), int64_t(recv.size())));
}

Status NcclCommunicator::Broadcast(std::span<float> data, int root) {
  ABLATE_RETURN_IF_ERROR(CheckNotAborted());
  int64_t n = int64_t(data.size());
  ABLATE_RETURN_IF_ERROR(Track(Stage(data.data(), n)));
  ABLATE_RETURN_IF_ERROR(Track(NcclStatus(
      &api_,
      api_.Broadcast(staging_.get(), staging_.get(), size_t(n), ncclFloat32, root, comm_, stream_),
      "ncclBroadcast", __FILE__, __LINE__)));
  return Track(Unstage(data.data(), n));
}

Status NcclCommunicator::AllReduce(void* data, int64_t n, WireType type, ReduceOp op) {
  return Track(NcclStatus(
      &api_, api_.AllReduce(data, data, size_t(n), ToNccl(type), ToNccl(op), comm_, stream_),
      "ncclAllReduce", __FILE__, __LINE__));
}

Status NcclCommunicator::ReduceScatter(const void* send, void* recv, int64_t n, WireType type,
                                       ReduceOp op) {
  return Track(NcclStatus(
      &api_, api_.ReduceScatter(send, recv, size_t(n), ToNccl(type), ToNccl(op), comm_, stream_),
      "ncclReduceScatter", __FILE__, __LINE__));
}

Status NcclCommunicator::AllGather(const void* send, void* recv, int64_t n, WireType type) {
  return Track(NcclStatus(&api_,
                          api_.AllGather(send, recv, size_t(n), ToNccl(type), comm_, stream_),
                          "ncclAllGather", __FILE__, __LINE__));
}

}  // namespace ablate
