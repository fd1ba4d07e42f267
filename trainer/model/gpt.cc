// GPT construction and forward pass (MODEL.md "Forward").
#include "trainer/model/gpt.h"

#include <algorithm>
#include <cstring>

#include "trainer/cpu/attention.h"
#include "trainer/cpu/embedding.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/mlp_act.h"
#include "trainer/cpu/residual.h"
#include "trainer/cpu/rmsnorm.h"
#include "trainer/cpu/softcap_cross_entropy.h"
#include "trainer/model/gpt_acts.h"

namespace ablate {
namespace {

// qkv (N, 3C) → q, k, v (N, C) each.
template <class T>
void SplitQkv(const T* qkv, T* q, T* k, T* v, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(q + i * c, qkv + i * 3 * c, sizeof(T) * c);
    std::memcpy(k + i * c, qkv + i * 3 * c + c, sizeof(T) * c);
    std::memcpy(v + i * c, qkv + i * 3 * c + 2 * c, sizeof(T) * c);
  }
}

template <class T>
std::vector<T> Zeros(int64_t n) {
  return std::vector<T>(n, T(0));
}

}  // namespace

template <class T>
Gpt<T>::Gpt(const ModelConfig& m, int64_t b, int64_t t)
    : m_(m), layout_(m), b_(b), t_(t), n_(b * t),
      rope_(cpu::rope_table<T>(t, m.head_dim, m.rope, m.rope_base)),
      params_(layout_.total()), grads_(layout_.total()) {
  InitOffsets();
  AllocateActivations();
}

std::vector<BlockOffsets> ComputeBlockOffsets(const ModelConfig& m, const ParamLayout& layout) {
  std::vector<BlockOffsets> blocks;
  for (int64_t i = 0; i < m.n_layer; ++i) {
    std::string p = "blocks." + std::to_string(i) + ".";
    auto off = [&](const std::string& name) {
      const ParamInfo* info = layout.Find(p + name);
      return info == nullptr ? int64_t(-1) : info->offset;
    };
    BlockOffsets o;
    o.lambdas = off("lambdas");
    o.qkv = m.merged_qkv ? off("attn.qkv.weight") : off("attn.q.weight");
    o.proj = off("attn.proj.weight");
    o.value_lambda = off("attn.value_lambda");
    o.ve_lambdas = off("attn.ve_lambdas");
    o.fc = off("mlp.fc.weight");
    o.mlp_proj = off("mlp.proj.weight");
    int64_t table = m.ValueEmbedTable(i);
    if (table >= 0 && m.HasAttention(i)) {
      o.ve_table = layout.Offset("value_embeds." + std::to_string(table) + ".weight");
    }
    blocks.push_back(o);
  }
  return blocks;
}

int64_t FirstAttentionLayer(const ModelConfig& m) {
  for (int64_t i = 0; i < m.n_layer; ++i) {
    if (m.HasAttention(i)) return i;
  }
  return -1;
}

template <class T>
void Gpt<T>::InitOffsets() {
  embed_ = layout_.Offset("embed.weight");
  head_ = m_.tie_embeddings ? embed_ : layout_.Offset("lm_head.weight");
  if (m_.unet_skips) skip_ = layout_.Offset("skip_weights");
  blocks_ = ComputeBlockOffsets(m_, layout_);
  first_attn_ = FirstAttentionLayer(m_);
}

template <class T>
void Gpt<T>::AllocateLayer(int64_t i, LayerActs<T>& a) {
  int64_t c = m_.model_dim, bt = n_, f = m_.hidden_dim();
  if (m_.unet_skips && i >= m_.n_layer / 2) a.skip_sum = Zeros<T>(bt * c);
  if (m_.embed_shortcut) a.mixed = Zeros<T>(bt * c);
  if (m_.HasAttention(i)) {
    for (auto* v : {&a.ln1, &a.q_raw, &a.k_raw, &a.v_raw, &a.q, &a.k, &a.v, &a.att,
                    &a.attn_out}) {
      *v = Zeros<T>(bt * c);
    }
    a.rstd1 = Zeros<T>(bt);
    a.q_rstd = Zeros<T>(bt * m_.n_head), a.k_rstd = Zeros<T>(bt * m_.n_head);
    if (blocks_[i].ve_table >= 0) a.ve = Zeros<T>(bt * c);
    a.lo.resize(bt);
    a.lse = Zeros<T>(bt * m_.n_head);
  }
  a.ln2 = Zeros<T>(bt * c), a.rstd2 = Zeros<T>(bt);
  a.fc = Zeros<T>(bt * f), a.act = Zeros<T>(bt * f), a.x_out = Zeros<T>(bt * c);
}

template <class T>
void Gpt<T>::AllocateActivations() {
  int64_t c = m_.model_dim, bt = n_, f = m_.hidden_dim(), v = m_.vocab_size;
  tokens_.resize(b_ * (t_ + 1));
  inputs_.resize(bt);
  targets_.resize(bt);
  emb_ = Zeros<T>(bt * c), emb_rstd_ = Zeros<T>(bt), x0_ = Zeros<T>(bt * c);
  layers_.resize(m_.n_layer);
  for (int64_t i = 0; i < m_.n_layer; ++i) AllocateLayer(i, layers_[i]);
  lf_ = Zeros<T>(bt * c), lf_rstd_ = Zeros<T>(bt);
  logits_ = Zeros<T>(bt * v), losses_ = Zeros<T>(bt), lse_ = Zeros<T>(bt);
  for (auto* d : {&dx_, &dtmp_, &dx0_, &dv1_, &dln_, &datt_, &dq_, &dk_, &dv_, &dq_raw_, &dk_raw_,
                  &dv_raw_, &dve_}) {
    *d = Zeros<T>(bt * c);
  }
  dact_ = Zeros<T>(bt * f), dfc_ = Zeros<T>(bt * f), dqkv_ = Zeros<T>(bt * 3 * c);
  if (m_.unet_skips) dskip_.assign(m_.n_layer / 2, Zeros<T>(bt * c));
}

template <class T>
Gpt<T>::~Gpt() = default;

template <class T>
T Gpt<T>::Forward(const int32_t* tokens, const std::vector<int64_t>& windows) {
  std::copy(tokens, tokens + b_ * (t_ + 1), tokens_.begin());
  for (int64_t bi = 0; bi < b_; ++bi) {
    for (int64_t ti = 0; ti < t_; ++ti) {
      inputs_[bi * t_ + ti] = tokens[bi * (t_ + 1) + ti];
      targets_[bi * t_ + ti] = tokens[bi * (t_ + 1) + ti + 1];
    }
  }
  EmbedForward();
  const T* x = x0_.data();
  for (int64_t i = 0; i < m_.n_layer; ++i) x = BlockForward(i, x, windows[i]);
  return HeadForward(x);
}

template <class T>
void Gpt<T>::EmbedForward() {
  int64_t c = m_.model_dim;
  cpu::embedding_forward(emb_.data(), P(embed_), inputs_.data(), n_, c);
  if (m_.embed_norm) {
    cpu::rmsnorm_forward(x0_.data(), emb_rstd_.data(), emb_.data(), n_, c);
  } else {
    x0_ = emb_;
  }
  if (m_.Bf16Stream()) cpu::round_to_bf16(x0_.data(), n_ * c);
}

template <class T>
cpu::Rounding Gpt<T>::StreamRounding() const {
  return m_.Bf16Stream() ? cpu::Rounding::kBf16 : cpu::Rounding::kNone;
}

// out = x + branch, branch (BT, C) the output of `x_out` GEMMs: fp32 adds in place; a bf16
// stream adds the bf16-rounded branch and rounds the sum (bf16 tensors added in PyTorch).
template <class T>
void Gpt<T>::AddBranch(T* out, const T* x, const T* act, const T* w, int64_t in) {
  int64_t c = m_.model_dim;
  if (!m_.Bf16Stream()) {
    std::copy(x, x + n_ * c, out);
    cpu::matmul_forward(out, act, w, n_, in, c, cpu::Output::kAdd);
    return;
  }
  cpu::matmul_forward(dtmp_.data(), act, w, n_, in, c);  // dtmp_: backward scratch, free here
  cpu::residual_mix_forward(out, x, T(1), dtmp_.data(), T(1), n_ * c, cpu::Rounding::kBf16);
}

template <class T>
const T* Gpt<T>::BlockForward(int64_t i, const T* x, int64_t window) {
  LayerActs<T>& a = layers_[i];
  int64_t c = m_.model_dim, half = m_.n_layer / 2;
  a.x_prev = x;
  if (m_.unet_skips && i >= half) {
    const T* skip = layers_[m_.n_layer - 1 - i].x_out.data();
    cpu::residual_mix_forward(a.skip_sum.data(), x, T(1), skip, P(skip_)[i - half], n_ * c,
                              StreamRounding());
    x = a.skip_sum.data();
  }
  a.x_pre = x;
  if (m_.embed_shortcut) {
    const T* lam = P(blocks_[i].lambdas);
    cpu::residual_mix_forward(a.mixed.data(), x, lam[0], x0_.data(), lam[1], n_ * c,
                              StreamRounding());
    x = a.mixed.data();
  }
  a.x_in = x;
  a.x_mid = x;
  if (m_.HasAttention(i)) AttentionForward(i, a, window);
  MlpForward(i, a);
  return a.x_out.data();
}

template <class T>
void Gpt<T>::AttentionForward(int64_t i, LayerActs<T>& a, int64_t window) {
  int64_t c = m_.model_dim, nh = m_.n_head, hd = m_.head_dim;
  const BlockOffsets& o = blocks_[i];
  cpu::rmsnorm_forward(a.ln1.data(), a.rstd1.data(), a.x_in, n_, c);
  cpu::matmul_forward(dqkv_.data(), a.ln1.data(), P(o.qkv), n_, c, 3 * c);  // scratch
  SplitQkv(dqkv_.data(), a.q_raw.data(), a.k_raw.data(), a.v_raw.data(), n_, c);
  ValueMixForward(i, a);
  if (m_.qk_norm) {
    cpu::rmsnorm_forward(a.q.data(), a.q_rstd.data(), a.q_raw.data(), n_ * nh, hd);
    cpu::rmsnorm_forward(a.k.data(), a.k_rstd.data(), a.k_raw.data(), n_ * nh, hd);
  } else {
    a.q = a.q_raw, a.k = a.k_raw;
  }
  cpu::rope_forward(a.q.data(), a.q.data(), rope_, b_, t_, nh, hd);
  cpu::rope_forward(a.k.data(), a.k.data(), rope_, b_, t_, nh, hd);
  cpu::AttentionMask mask{m_.doc_masking, m_.bos_token, window, m_.window.block_tokens};
  cpu::attention_key_start(a.lo.data(), tokens_.data(), t_ + 1, b_, t_, mask);
  cpu::attention_forward(a.att.data(), a.lse.data(), a.q.data(), a.k.data(), a.v.data(),
                         a.lo.data(), b_, t_, nh, hd, T(m_.AttentionScale()));
  AddBranch(a.attn_out.data(), a.x_in, a.att.data(), P(o.proj), c);
  a.x_mid = a.attn_out.data();
}

template <class T>
void Gpt<T>::ValueMixForward(int64_t i, LayerActs<T>& a) {
  int64_t nc = n_ * m_.model_dim;
  const BlockOffsets& o = blocks_[i];
  if (m_.value_residual) {
    T lam = P(o.value_lambda)[0];
    const T* v1 = layers_[first_attn_].v_raw.data();
    cpu::residual_mix_forward(a.v.data(), a.v_raw.data(), T(1) - lam, v1, lam, nc);
  } else if (m_.value_embeds > 0) {
    const T* lam = P(o.ve_lambdas);
    const T* ve = nullptr;
    if (o.ve_table >= 0) {
      cpu::embedding_forward(a.ve.data(), P(o.ve_table), inputs_.data(), n_, m_.model_dim);
      ve = a.ve.data();
    }
    cpu::residual_mix_forward(a.v.data(), a.v_raw.data(), lam[0], ve, lam[1], nc);
  } else {
    a.v = a.v_raw;
  }
}

template <class T>
void Gpt<T>::MlpForward(int64_t i, LayerActs<T>& a) {
  int64_t c = m_.model_dim, f = m_.hidden_dim();
  const BlockOffsets& o = blocks_[i];
  cpu::rmsnorm_forward(a.ln2.data(), a.rstd2.data(), a.x_mid, n_, c);
  cpu::matmul_forward(a.fc.data(), a.ln2.data(), P(o.fc), n_, c, f);
  cpu::mlp_act_forward(a.act.data(), a.fc.data(), n_ * f, m_.mlp_act);
  AddBranch(a.x_out.data(), a.x_mid, a.act.data(), P(o.mlp_proj), f);
}

template <class T>
T Gpt<T>::HeadForward(const T* x) {
  int64_t c = m_.model_dim, v = m_.vocab_size;
  x_last_ = x;
  cpu::rmsnorm_forward(lf_.data(), lf_rstd_.data(), x, n_, c);
  if (m_.Bf16Stream()) cpu::round_to_bf16(lf_.data(), n_ * c);
  cpu::lm_head_forward(logits_.data(), losses_.data(), lse_.data(), lf_.data(), P(head_),
                       targets_.data(), n_, c, v, m_.softcap);
  return T(cpu::mean_loss(losses_.data(), n_));
}

template class Gpt<float>;
template class Gpt<double>;

}  // namespace ablate
