// bf16 as PyTorch rounds to it (round to nearest, ties to even; NaN stays NaN): the CPU's
// emulation of bf16 parameter storage and the safetensors BF16 dtype.
#ifndef ABLATE_TRAINER_MODEL_BF16_H_
#define ABLATE_TRAINER_MODEL_BF16_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "trainer/model/param_layout.h"

namespace ablate {

// The upper 16 bits of x rounded as c10::BFloat16's round_to_nearest_even.
inline uint16_t Bf16Bits(float x) {
  if (std::isnan(x)) return 0x7FC0;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += ((u >> 16) & 1) + 0x7FFF;
  return uint16_t(u >> 16);
}

inline float Bf16ToFloat(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

inline float RoundToBf16(float x) { return Bf16ToFloat(Bf16Bits(x)); }

// Rounds every parameter the layout marks bf16 (ParamInfo::bf16) in place: what storing it in
// bf16 would keep. params: (layout.total()).
inline void RoundStoredParams(const ParamLayout& layout, float* params) {
  for (const ParamInfo& p : layout.params()) {
    if (!p.bf16) continue;
    for (int64_t i = 0; i < p.numel; ++i) params[p.offset + i] = RoundToBf16(params[p.offset + i]);
  }
}

}  // namespace ablate

#endif  // ABLATE_TRAINER_MODEL_BF16_H_
