// Per-layer activations the CUDA GPT keeps for its backward (device pointers owned by the model;
// CPU twin: trainer/model/gpt_acts.h). Internal to trainer/cuda.
#ifndef ABLATE_TRAINER_CUDA_GPT_ACTS_H_
#define ABLATE_TRAINER_CUDA_GPT_ACTS_H_

#include <cstdint>
#include <type_traits>

#include "trainer/cuda/dtype.h"

namespace ablate::cuda {

// The stream values a layer keeps, in the stream's storage type S: float, or bf16 with a bf16
// stream (activation_dtype bf16), whose values are bf16 anyway (MODEL.md "Activation dtype").
template <class S>
struct LayerStream {
  const S* x_prev = nullptr;  // (BT, C) stream entering the block
  const S* x_pre = nullptr;   // (BT, C) after the U-Net skip
  const S* x_in = nullptr;    // (BT, C) block input, after the shortcut mix
  const S* x_mid = nullptr;   // (BT, C) after attention (x_in when the layer has none)
  S* skip_sum = nullptr;      // (BT, C) decoder layers with U-Net skips
  S* mixed = nullptr;         // (BT, C) shortcut output
  S* attn_out = nullptr;      // (BT, C) x_in + attention
  S* x_out = nullptr;         // (BT, C)
};

struct LayerActs {
  LayerStream<float> f32;  // an fp32 stream's values
  LayerStream<bf16> b16;   // a bf16 stream's (one of the two is used)
  bf16* ln1 = nullptr;     // (BT, C)
  float* rstd1 = nullptr;  // (BT)
  bf16 *q_raw = nullptr, *k_raw = nullptr, *v_raw = nullptr;  // (BT, C) from the QKV product
  bf16 *q = nullptr, *k = nullptr;                            // (BT, C) after qk-norm and RoPE
  bf16* v = nullptr;                           // (BT, C) after mixing (= v_raw when nothing mixes)
  float *q_rstd = nullptr, *k_rstd = nullptr;  // (BT·NH)
  const int32_t* lo = nullptr;                 // (B, T) first visible key per query (a shared slot)
  bf16* att = nullptr;                         // (BT, C) attention output
  float* lse = nullptr;                        // (B, NH, T)
  bf16* ln2 = nullptr;                         // (BT, C)
  float* rstd2 = nullptr;                      // (BT)
  bf16* fc = nullptr;                          // (BT, F) before the activation

  template <class S>
  LayerStream<S>& stream() {
    if constexpr (std::is_same_v<S, float>) {
      return f32;
    } else {
      return b16;
    }
  }
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_GPT_ACTS_H_
