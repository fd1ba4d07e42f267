// Which writers of the CUDA backward's stream gradient dx also write its bf16 copy dxb, the
// operand of the next bf16 GEMM (gpt_backward.cc; NOTES.md item 12). A writer writes the copy
// when the next op to touch dx reads it as bf16, so that no fp32 → bf16 pass over dx runs and no
// copy is written that nothing reads.
//
// The backward's order per layer i (from the last down): the U-Net skip's add into dx (layers
// i < L/2 with U-Net skips; always writes the copy: the MLP reads it next), the MLP's backward
// (reads the copy; its norm writes dx), the attention's (reads the copy; its norm writes dx),
// the x0 shortcut's mix (writes dx), the U-Net skip's backward (reads dx in fp32, writes none).
// Host code only (no CUDA headers), so that its tests run anywhere.
#ifndef ABLATE_TRAINER_CUDA_DX_COPY_PLAN_H_
#define ABLATE_TRAINER_CUDA_DX_COPY_PLAN_H_

#include <cstdint>
#include <vector>

#include "trainer/model/model_config.h"

namespace ablate::cuda {

struct DxCopyPlan {
  bool final_norm = false;  // the final norm's backward, before layer L − 1
  // Per layer: the MLP's norm backward, the attention's norm backward, the shortcut's mix.
  std::vector<bool> mlp_norm, attention_norm, shortcut;
};

// Whether, after layer i's backward (i = L: after the final norm's), the next op to touch dx is
// layer i − 1's MLP backward: not when layer i − 1 first adds its U-Net skip into dx (that add
// writes the copy) or when there is no layer i − 1.
bool NextLayerReadsDxCopy(const ModelConfig& m, int64_t i);

DxCopyPlan PlanDxCopies(const ModelConfig& m);

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_DX_COPY_PLAN_H_
