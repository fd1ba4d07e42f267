// Which attention kernels the CUDA backend runs. A speed choice only: every choice computes the
// same function (MODEL.md's masks) within bf16 rounding, and the CPU backend ignores it.
#ifndef ABLATE_TRAINER_CONFIG_ATTENTION_IMPL_H_
#define ABLATE_TRAINER_CONFIG_ATTENTION_IMPL_H_

#include <optional>
#include <string_view>

namespace ablate {

// kAuto: the kernels the backend trusts for the shape (trainer/cuda/attention.h says which).
// kTiled: WMMA tiles with the softmax through shared memory (head_dim 64 or 128).
// kMma: register-resident mma.sync kernels (trainer/cuda/attention_mma.h; head_dim 64 or 128).
// kWarp: one warp per row, any even head_dim (correct, not fast).
enum class AttentionImpl { kAuto, kTiled, kMma, kWarp };

inline const char* AttentionImplName(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::kAuto:
      return "auto";
    case AttentionImpl::kTiled:
      return "tiled";
    case AttentionImpl::kMma:
      return "mma";
    case AttentionImpl::kWarp:
      return "warp";
  }
  return "auto";
}

// "auto", "tiled", "mma" or "warp"; nullopt for anything else.
inline std::optional<AttentionImpl> ParseAttentionImpl(std::string_view name) {
  for (AttentionImpl impl :
       {AttentionImpl::kAuto, AttentionImpl::kTiled, AttentionImpl::kMma, AttentionImpl::kWarp}) {
    if (name == AttentionImplName(impl)) return impl;
  }
  return std::nullopt;
}

}  // namespace ablate

#endif  // ABLATE_TRAINER_CONFIG_ATTENTION_IMPL_H_
