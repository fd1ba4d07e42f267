// Element types of the CUDA backend: bf16 for what the tensor cores read (GEMM and attention
// operands, weight copies), fp32 for everything else (see trainer/README.md, precision plan).
#ifndef ABLATE_TRAINER_CUDA_DTYPE_H_
#define ABLATE_TRAINER_CUDA_DTYPE_H_

#include <cuda_bf16.h>

#include <cstdint>

namespace ablate::cuda {

using bf16 = __nv_bfloat16;

static_assert(sizeof(bf16) == 2, "bf16 is a 16-bit type");

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_DTYPE_H_
