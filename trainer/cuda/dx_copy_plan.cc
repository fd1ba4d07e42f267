#include "trainer/cuda/dx_copy_plan.h"

namespace ablate::cuda {

bool NextLayerReadsDxCopy(const ModelConfig& m, int64_t i) {
  return i > 0 && !(m.unet_skips && i - 1 < m.n_layer / 2);
}

DxCopyPlan PlanDxCopies(const ModelConfig& m) {
  DxCopyPlan p;
  size_t layers = size_t(m.n_layer);
  p.final_norm = NextLayerReadsDxCopy(m, m.n_layer);
  p.mlp_norm.assign(layers, false);
  p.attention_norm.assign(layers, false);
  p.shortcut.assign(layers, false);
  for (int64_t i = 0; i < m.n_layer; ++i) {
    bool next = NextLayerReadsDxCopy(m, i), attention = m.HasAttention(i);
    // dx's next reader after the MLP's norm: this layer's attention, else the shortcut's mix,
    // else the next layer.
    p.mlp_norm[size_t(i)] = attention || (!m.embed_shortcut && next);
    p.attention_norm[size_t(i)] = attention && !m.embed_shortcut && next;
    p.shortcut[size_t(i)] = m.embed_shortcut && next;
  }
  return p;
}

}  // namespace ablate::cuda
