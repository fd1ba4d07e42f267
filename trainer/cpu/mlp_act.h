// The MLP's elementwise activation: relu(u)² (r5+) or tanh-approximate GELU.
#ifndef ABLATE_TRAINER_CPU_MLP_ACT_H_
#define ABLATE_TRAINER_CPU_MLP_ACT_H_

#include <cstdint>

#include "trainer/cpu/output.h"

namespace ablate::cpu {

enum class MlpAct { kRelu2, kGelu };

// out (N) = act(inp (N)); out may alias nothing.
template <class T>
void mlp_act_forward(T* out, const T* inp, int64_t n, MlpAct act);

// dinp (N) += act'(inp) · dout; with Output::kOverwrite, dinp = instead (and may alias dout).
template <class T>
void mlp_act_backward(T* dinp, const T* dout, const T* inp, int64_t n, MlpAct act,
                      Output mode = Output::kAdd);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_MLP_ACT_H_
