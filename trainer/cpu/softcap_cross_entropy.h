// The loss head, fused: optional logit softcap, then softmax cross-entropy per row.
// tanh: c·tanh(z/c); sigmoid: c·σ(z/(c/4)) (r19/r20's 30·σ(z/7.5)); none: identity.
#ifndef ABLATE_TRAINER_CPU_SOFTCAP_CROSS_ENTROPY_H_
#define ABLATE_TRAINER_CPU_SOFTCAP_CROSS_ENTROPY_H_

#include <cstdint>

namespace ablate::cpu {

enum class SoftcapKind { kNone, kTanh, kSigmoid };

struct Softcap {
  SoftcapKind kind = SoftcapKind::kNone;
  double cap = 0;  // c; ignored for kNone
};

// In place: logits (N, V) raw → capped. lse (N) = logsumexp(capped);
// losses (N) = lse − capped[target]. REQUIRES: 0 <= targets[i] < V.
template <class T>
void softcap_cross_entropy_forward(T* losses, T* lse, T* logits, const int32_t* targets,
                                   int64_t n, int64_t v, Softcap cap);

// dlogits (N, V) = d(dloss · Σ losses)/d(raw logits), from the forward's capped logits and lse.
// Overwrites; dlogits may alias capped.
template <class T>
void softcap_cross_entropy_backward(T* dlogits, const T* capped, const T* lse,
                                    const int32_t* targets, int64_t n, int64_t v, Softcap cap,
                                    T dloss);

// The whole output head in vocabulary blocks, so that no (N, V) tensor but the capped logits is
// ever written and each block of them is capped and reduced while it is still in cache.
// w (V, C) is the head weight, x (N, C) its input; logits (N, V) receive the capped logits,
// lse and losses (N) as in softcap_cross_entropy_forward. Results do not depend on the thread
// count. REQUIRES: 0 <= targets[i] < V.
template <class T>
void lm_head_forward(T* logits, T* losses, T* lse, const T* x, const T* w, const int32_t* targets,
                     int64_t n, int64_t c, int64_t v, Softcap cap);

// dx (N, C) += and dw (V, C) += the gradients of dloss · Σ losses, from the forward's capped
// logits and lse; dlogits are formed one block at a time and never stored whole.
template <class T>
void lm_head_backward(T* dx, T* dw, const T* logits, const T* lse, const T* x, const T* w,
                      const int32_t* targets, int64_t n, int64_t c, int64_t v, Softcap cap,
                      T dloss);

// The mean of losses (N), summed in double in index order: the reported loss. A float sum is
// off by ~1e-3 of the loss at N = 65,536 (each add rounds to the running sum's ulp).
template <class T>
double mean_loss(const T* losses, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += double(losses[i]);
  return n > 0 ? sum / double(n) : 0.0;
}

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_SOFTCAP_CROSS_ENTROPY_H_
