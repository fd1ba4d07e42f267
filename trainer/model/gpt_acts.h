// Per-layer activations the GPT keeps for its backward. Internal to trainer/model.
#ifndef ABLATE_TRAINER_MODEL_GPT_ACTS_H_
#define ABLATE_TRAINER_MODEL_GPT_ACTS_H_

#include <cstdint>
#include <vector>

namespace ablate {

template <class T>
struct LayerActs {
  const T* x_prev = nullptr;  // (BT, C) stream entering the block (previous x_out or x0)
  const T* x_pre = nullptr;   // (BT, C) after the U-Net skip (x_prev or skip_sum)
  const T* x_in = nullptr;    // (BT, C) block input, after the shortcut mix
  const T* x_mid = nullptr;   // (BT, C) after attention (x_in when the layer has none)
  std::vector<T> skip_sum;    // (BT, C) decoder layers with U-Net skips
  std::vector<T> mixed;       // (BT, C) shortcut output
  std::vector<T> ln1, rstd1;  // (BT, C), (BT)
  std::vector<T> q_raw, k_raw, v_raw;  // (BT, C) each, straight from the qkv product
  std::vector<T> q, k, v;     // (BT, C): q, k after qk-norm and RoPE; v after mixing
  std::vector<T> q_rstd, k_rstd;  // (BT*NH)
  std::vector<T> ve;          // (BT, C) value-embedding rows (layers with a table)
  std::vector<int32_t> lo;    // (B, T) first visible key per query
  std::vector<T> att, lse;    // (BT, C), (B, NH, T)
  std::vector<T> attn_out;    // (BT, C) x_in + attention
  std::vector<T> ln2, rstd2;  // (BT, C), (BT)
  std::vector<T> fc, act;     // (BT, F) each
  std::vector<T> x_out;       // (BT, C)
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_MODEL_GPT_ACTS_H_
