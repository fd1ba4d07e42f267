// Launchers of the fused q/k/v kernels (qkv_kernels.cuh) on the GPU's primitives.
#include <string>

#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/mma_primitives.cuh"
#include "trainer/cuda/qkv.h"
#include "trainer/cuda/qkv_kernels.cuh"
#include "trainer/cuda/rope.h"

namespace ablate::cuda {
namespace {

using QkvP = DevicePrimitives;

Status QkvShapeCheck(const char* what, int64_t n, int64_t t, int64_t nh, int64_t hd,
                     const RopeTable& table) {
  if (hd <= 0 || hd % 2 != 0 || hd > kQkvMaxHeadDim) {
    return Error{std::string(what) + ": head_dim " + std::to_string(hd) +
                     " is not an even number in [2, " + std::to_string(kQkvMaxHeadDim) + "]",
                 ""};
  }
  if (t <= 0 || n % t != 0 || nh <= 0) {
    return Error{std::string(what) + ": " + std::to_string(n) +
                     " rows are not whole sequences of " + std::to_string(t) + " (" +
                     std::to_string(nh) + " heads)",
                 ""};
  }
  if (t > table.seq_len || hd != table.head_dim) {
    return Error{std::string(what) + ": tensor (T " + std::to_string(t) + ", HD " +
                     std::to_string(hd) + ") does not fit the RoPE table (T " +
                     std::to_string(table.seq_len) + ", HD " + std::to_string(table.head_dim) + ")",
                 ""};
  }
  return {};
}

unsigned QkvBlocks(int64_t n, int64_t nh) {
  return unsigned((n * nh + qkv_kernels::kWarps - 1) / qkv_kernels::kWarps);
}

}  // namespace

Status qkv_forward(CudaContext& ctx, QkvForwardArgs args, const RopeTable& table) {
  ABLATE_RETURN_IF_ERROR(QkvShapeCheck("qkv_forward", args.n, args.t, args.nh, args.hd, table));
  if (args.n == 0) return {};
  args.rope_cos = table.cos.get();
  args.rope_sin = table.sin.get();
  qkv_kernels::QkvForwardKernel<QkvP><<<QkvBlocks(args.n, args.nh), qkv_kernels::kThreads,
                                        qkv_kernels::SmemBytes(args.hd), ctx.stream()>>>(args);
  ABLATE_CUDA_LAUNCH_CHECK("QkvForwardKernel");
  return {};
}

Status qkv_backward(CudaContext& ctx, QkvBackwardArgs args, const RopeTable& table) {
  ABLATE_RETURN_IF_ERROR(QkvShapeCheck("qkv_backward", args.n, args.t, args.nh, args.hd, table));
  if (args.n == 0) return {};
  args.rope_cos = table.cos.get();
  args.rope_sin = table.sin.get();
  qkv_kernels::QkvBackwardKernel<QkvP><<<QkvBlocks(args.n, args.nh), qkv_kernels::kThreads,
                                         qkv_kernels::SmemBytes(args.hd), ctx.stream()>>>(args);
  ABLATE_CUDA_LAUNCH_CHECK("QkvBackwardKernel");
  return {};
}

}  // namespace ablate::cuda
