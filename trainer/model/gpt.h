// The GPT of MODEL.md on the CPU: forward and hand-written backward over a flat parameter buffer.
// Instantiated for float (training) and double (finite-difference tests). Not thread-safe; one
// instance per rank.
#ifndef ABLATE_TRAINER_MODEL_GPT_H_
#define ABLATE_TRAINER_MODEL_GPT_H_

#include <cstdint>
#include <vector>

#include "trainer/cpu/residual.h"
#include "trainer/cpu/rope.h"
#include "trainer/model/model_config.h"
#include "trainer/model/param_layout.h"

namespace ablate {

// Offsets of one block's parameters in the flat buffer (-1 when absent).
struct BlockOffsets {
  int64_t lambdas = -1, qkv = -1, proj = -1, value_lambda = -1, ve_lambdas = -1;
  int64_t fc = -1, mlp_proj = -1;
  int64_t ve_table = -1;  // offset of the value-embedding table this layer reads
};

// Every block's offsets in `layout`, and the layer whose raw v is v1 (first attention layer;
// -1 when none). Shared by the CPU and CUDA models.
std::vector<BlockOffsets> ComputeBlockOffsets(const ModelConfig& m, const ParamLayout& layout);
int64_t FirstAttentionLayer(const ModelConfig& m);

template <class T>
struct LayerActs;

template <class T>
class Gpt {
 public:
  // Allocates activations for micro-batches of b sequences of t tokens (t <= seq_len is fine).
  Gpt(const ModelConfig& m, int64_t b, int64_t t);
  ~Gpt();
  Gpt(const Gpt&) = delete;
  Gpt& operator=(const Gpt&) = delete;

  const ModelConfig& config() const { return m_; }
  const ParamLayout& layout() const { return layout_; }
  std::vector<T>& params() { return params_; }  // (layout().total())
  std::vector<T>& grads() { return grads_; }    // (layout().total()); Backward accumulates
  int64_t batch() const { return b_; }
  int64_t seq() const { return t_; }

  // tokens (B, T+1) int32: inputs [:, :T], targets [:, 1:]. windows: per-layer window blocks
  // (LayerWindowBlocks; 0 = full causal). Returns the mean loss (summed in double,
  // cpu::mean_loss); keeps activations.
  // REQUIRES: inputs < embed_vocab_size, targets < vocab_size.
  T Forward(const int32_t* tokens, const std::vector<int64_t>& windows);
  // grads += d(scale · mean loss)/d(params) for the last Forward.
  void Backward(T scale);
  const std::vector<T>& logits() const { return logits_; }  // (B, T, V), after the softcap
  const std::vector<T>& losses() const { return losses_; }  // (B·T) of the last Forward

 private:
  void InitOffsets();
  void AllocateActivations();
  void AllocateLayer(int64_t i, LayerActs<T>& a);
  void EmbedForward();
  const T* BlockForward(int64_t i, const T* x, int64_t window);
  void AttentionForward(int64_t i, LayerActs<T>& a, int64_t window);
  void ValueMixForward(int64_t i, LayerActs<T>& a);
  void MlpForward(int64_t i, LayerActs<T>& a);
  T HeadForward(const T* x);
  cpu::Rounding StreamRounding() const;
  void AddBranch(T* out, const T* x, const T* act, const T* w, int64_t in);
  void HeadBackward(T scale);
  void BlockBackward(int64_t i);
  void MlpBackward(int64_t i, LayerActs<T>& a);
  void AttentionBackward(int64_t i, LayerActs<T>& a);
  void ValueMixBackward(int64_t i, LayerActs<T>& a);
  void ShortcutBackward(int64_t i, LayerActs<T>& a);
  void EmbedBackward();
  T* P(int64_t off) { return params_.data() + off; }
  T* G(int64_t off) { return grads_.data() + off; }

  ModelConfig m_;
  ParamLayout layout_;
  int64_t b_, t_, n_;  // n_ = b_ * t_
  std::vector<BlockOffsets> blocks_;
  int64_t embed_ = 0, head_ = 0, skip_ = -1;
  int64_t first_attn_ = -1;  // layer whose raw v is v1
  cpu::RopeTable<T> rope_;
  std::vector<T> params_, grads_;

  // Activations.
  std::vector<int32_t> tokens_;       // (B, T+1)
  std::vector<int32_t> inputs_, targets_;  // (B*T)
  std::vector<T> emb_, emb_rstd_, x0_;     // (BT, C), (BT), (BT, C)
  std::vector<LayerActs<T>> layers_;
  const T* x_last_ = nullptr;              // (BT, C) stream entering the final norm
  std::vector<T> lf_, lf_rstd_;            // (BT, C), (BT)
  std::vector<T> logits_, losses_, lse_;   // (BT, V), (BT), (BT)

  // Backward scratch.
  std::vector<T> dx_, dtmp_, dx0_, dv1_, dln_;   // (BT, C)
  std::vector<T> dact_, dfc_;                    // (BT, F)
  std::vector<T> datt_, dq_, dk_, dv_, dq_raw_, dk_raw_, dv_raw_, dve_;  // (BT, C)
  std::vector<T> dqkv_;                          // (BT, 3C)
  std::vector<std::vector<T>> dskip_;            // (L/2, BT, C)
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_MODEL_GPT_H_
