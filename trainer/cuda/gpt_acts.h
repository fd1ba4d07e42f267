// Per-layer activations the CUDA GPT keeps for its backward (device pointers owned by the model;
// CPU twin: trainer/model/gpt_acts.h). Internal to trainer/cuda.
#ifndef ABLATE_TRAINER_CUDA_GPT_ACTS_H_
#define ABLATE_TRAINER_CUDA_GPT_ACTS_H_

#include <cstdint>

#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

struct LayerActs {
  const float* x_prev = nullptr;  // (BT, C) stream entering the block
  const float* x_pre = nullptr;   // (BT, C) after the U-Net skip
  const float* x_in = nullptr;    // (BT, C) block input, after the shortcut mix
  const float* x_mid = nullptr;   // (BT, C) after attention (x_in when the layer has none)
  float* skip_sum = nullptr;      // (BT, C) decoder layers with U-Net skips
  float* mixed = nullptr;         // (BT, C) shortcut output
  bf16* ln1 = nullptr;            // (BT, C)
  float* rstd1 = nullptr;         // (BT)
  bf16 *q_raw = nullptr, *k_raw = nullptr, *v_raw = nullptr;  // (BT, C) from the QKV product
  bf16 *q = nullptr, *k = nullptr;                            // (BT, C) after qk-norm and RoPE
  bf16* v = nullptr;                           // (BT, C) after mixing (= v_raw when nothing mixes)
  float *q_rstd = nullptr, *k_rstd = nullptr;  // (BT·NH)
  const int32_t* lo = nullptr;                 // (B, T) first visible key per query (a shared slot)
  bf16* att = nullptr;                         // (BT, C) attention output
  float* lse = nullptr;                        // (B, NH, T)
  float* attn_out = nullptr;                   // (BT, C) x_in + attention
  bf16* ln2 = nullptr;                         // (BT, C)
  float* rstd2 = nullptr;                      // (BT)
  bf16* fc = nullptr;                          // (BT, F) before the activation
  float* x_out = nullptr;                      // (BT, C)
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_GPT_ACTS_H_
