// Causal self-attention with document masking and block sliding windows, without a T×T matrix:
// every mask in MODEL.md leaves query t a contiguous key range [lo(t), t], so the kernels take
// queries in tiles of 64 and compute each tile's scores, softmax gradients and products as GEMMs
// over the union of its rows' ranges only (keys left of every row's lo are never touched), and
// keep one log-sum-exp per query for the backward (flash-attention style recomputation).
// OpenBLAS runs single-threaded inside the (batch, head) loop (see matmul.cc).
#ifndef ABLATE_TRAINER_CPU_ATTENTION_H_
#define ABLATE_TRAINER_CPU_ATTENTION_H_

#include <cstdint>

namespace ablate::cpu {

// Which keys a query may see, as MODEL.md's "Mask": s <= t; same document when doc_masking (a
// BOS token opens its document); block(s) >= block(t) − n + 1 when window_blocks n > 0.
struct AttentionMask {
  bool doc_masking = false;
  int32_t bos_token = 0;
  int64_t window_blocks = 0;  // 0 = no window (plain causal)
  int64_t block_tokens = 1;
};

// lo (B, T): first visible key per query, from the input tokens (B, T) (row stride `stride`).
void attention_key_start(int32_t* lo, const int32_t* tokens, int64_t stride, int64_t b, int64_t t,
                         const AttentionMask& mask);

// out (B, T, NH, HD) = softmax(scale · q kᵀ over keys [lo, t]) v; lse (B, NH, T).
// q, k, v (B, T, NH, HD).
template <class T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v, const int32_t* lo,
                       int64_t b, int64_t t, int64_t nh, int64_t hd, T scale);

// dq, dk, dv (B, T, NH, HD) += gradients given dout and the forward's out and lse.
template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                        const T* out, const T* lse, const int32_t* lo, int64_t b, int64_t t,
                        int64_t nh, int64_t hd, T scale);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_ATTENTION_H_
