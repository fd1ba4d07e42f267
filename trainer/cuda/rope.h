// Rotary position embedding on (B, T, NH, HD) tensors, pairs (j, j + HD/2), position = index in
// the sequence. The angle tables are the CPU twin's (cpu::rope_table), uploaded once, so both
// backends rotate by bit-identical cos/sin. CPU twin: trainer/cpu/rope.h.
#ifndef ABLATE_TRAINER_CUDA_ROPE_H_
#define ABLATE_TRAINER_CUDA_ROPE_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cpu/rope.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/device_buffer.h"

namespace ablate::cuda {

// cpu::RopeTable<float> in device memory.
struct RopeTable {
  DeviceBuffer<float> cos;  // (T, HD/2)
  DeviceBuffer<float> sin;  // (T, HD/2)
  int64_t seq_len = 0, head_dim = 0;
};

// Builds the table on the host and uploads it.
Result<RopeTable> rope_table(CudaContext& ctx, int64_t seq_len, int64_t head_dim,
                             cpu::RopeKind kind, double base);

// out = rope(inp); out may alias inp. T is bf16 (forward on q, k) or float (gradients).
// REQUIRES: t <= table.seq_len, hd == table.head_dim.
template <class T>
Status rope_forward(CudaContext& ctx, T* out, const T* inp, const RopeTable& table, int64_t b,
                    int64_t t, int64_t nh, int64_t hd);

// dinp = ropeᵀ(dout) (overwrites; dinp may alias dout).
template <class T>
Status rope_backward(CudaContext& ctx, T* dinp, const T* dout, const RopeTable& table, int64_t b,
                     int64_t t, int64_t nh, int64_t hd);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_ROPE_H_
