// The MLP's elementwise activation on bf16 tensors, computed in fp32: relu(u)² or tanh-approximate
// GELU. cuBLASLt's fused epilogues offer GELU but not relu², the records' activation, so this is
// its own pass. CPU twin: trainer/cpu/mlp_act.h.
#ifndef ABLATE_TRAINER_CUDA_MLP_ACT_H_
#define ABLATE_TRAINER_CUDA_MLP_ACT_H_

#include <cstdint>

#include "trainer/config/result.h"
#include "trainer/cpu/mlp_act.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

using cpu::MlpAct;

// out (N) = act(inp (N)); out may alias inp.
Status mlp_act_forward(CudaContext& ctx, bf16* out, const bf16* inp, int64_t n, MlpAct act);

// dinp (N) = act'(inp) · dout (overwrites; dinp may alias dout).
Status mlp_act_backward(CudaContext& ctx, bf16* dinp, const bf16* dout, const bf16* inp, int64_t n,
                        MlpAct act);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_MLP_ACT_H_
