// GPT backward pass: the exact reverse of gpt.cc, accumulating into grads(). A bf16 stream's
// roundings pass gradients straight through (fp32 gradients; MODEL.md "Activation dtype"); the
// backward sees the rounded activations and the bf16-rounded mix weights the forward used.
#include <algorithm>
#include <cstring>

#include "trainer/cpu/attention.h"
#include "trainer/cpu/embedding.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/mlp_act.h"
#include "trainer/cpu/residual.h"
#include "trainer/cpu/rmsnorm.h"
#include "trainer/cpu/softcap_cross_entropy.h"
#include "trainer/model/gpt.h"
#include "trainer/model/gpt_acts.h"

namespace ablate {
namespace {

// q, k, v (N, C) → qkv (N, 3C).
template <class T>
void MergeQkv(T* qkv, const T* q, const T* k, const T* v, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(qkv + i * 3 * c, q + i * c, sizeof(T) * c);
    std::memcpy(qkv + i * 3 * c + c, k + i * c, sizeof(T) * c);
    std::memcpy(qkv + i * 3 * c + 2 * c, v + i * c, sizeof(T) * c);
  }
}

template <class T>
void Zero(std::vector<T>& v) {
  std::fill(v.begin(), v.end(), T(0));
}

template <class T>
void AddInto(std::vector<T>& dst, const std::vector<T>& src) {
  for (size_t i = 0; i < dst.size(); ++i) dst[i] += src[i];
}

}  // namespace

template <class T>
void Gpt<T>::Backward(T scale) {
  Zero(dx0_);
  Zero(dv1_);
  for (auto& d : dskip_) Zero(d);
  HeadBackward(scale);
  for (int64_t i = m_.n_layer - 1; i >= 0; --i) BlockBackward(i);
  AddInto(dx0_, dx_);  // layer 0's input stream is x0
  EmbedBackward();
}

template <class T>
void Gpt<T>::HeadBackward(T scale) {
  int64_t c = m_.model_dim, v = m_.vocab_size;
  Zero(dln_);  // lm_head_backward accumulates
  cpu::lm_head_backward(dln_.data(), G(head_), logits_.data(), lse_.data(), lf_.data(), P(head_),
                        targets_.data(), n_, c, v, m_.softcap, scale / T(n_));
  cpu::rmsnorm_backward(dx_.data(), dln_.data(), x_last_, lf_rstd_.data(), n_, c,
                        cpu::Output::kOverwrite);
}

// On entry dx_ = d(x_out of layer i); on exit dx_ = d(x_prev of layer i).
template <class T>
void Gpt<T>::BlockBackward(int64_t i) {
  LayerActs<T>& a = layers_[i];
  int64_t half = m_.n_layer / 2, nc = n_ * m_.model_dim;
  if (m_.unet_skips && i < half) AddInto(dx_, dskip_[i]);
  MlpBackward(i, a);
  if (m_.HasAttention(i)) AttentionBackward(i, a);
  if (m_.embed_shortcut) ShortcutBackward(i, a);
  if (m_.unet_skips && i >= half) {
    // x_pre = x_prev + w·skip: dx passes through unchanged.
    const T* skip = layers_[m_.n_layer - 1 - i].x_out.data();
    cpu::MixGrads<T> g{nullptr, dskip_[m_.n_layer - 1 - i].data(), nullptr, G(skip_) + i - half};
    T w = cpu::mix_weight(P(skip_)[i - half], StreamRounding());
    cpu::residual_mix_backward(g, dx_.data(), a.x_prev, T(1), skip, w, nc);
  }
}

// x_out = x_mid + act(ln2 Wfcᵀ) Wprojᵀ; leaves dx_ = d(x_mid).
template <class T>
void Gpt<T>::MlpBackward(int64_t i, LayerActs<T>& a) {
  int64_t c = m_.model_dim, f = m_.hidden_dim();
  const BlockOffsets& o = blocks_[i];
  cpu::matmul_backward(dact_.data(), G(o.mlp_proj), dx_.data(), a.act.data(), P(o.mlp_proj), n_,
                       f, c, cpu::Output::kOverwrite);
  cpu::mlp_act_backward(dfc_.data(), dact_.data(), a.fc.data(), n_ * f, m_.mlp_act,
                        cpu::Output::kOverwrite);
  cpu::matmul_backward(dln_.data(), G(o.fc), dfc_.data(), a.ln2.data(), P(o.fc), n_, c, f,
                       cpu::Output::kOverwrite);
  cpu::rmsnorm_backward(dx_.data(), dln_.data(), a.x_mid, a.rstd2.data(), n_, c);
}

// x_mid = x_in + attention(norm(x_in)) Wprojᵀ; leaves dx_ = d(x_in).
template <class T>
void Gpt<T>::AttentionBackward(int64_t i, LayerActs<T>& a) {
  int64_t c = m_.model_dim, nh = m_.n_head, hd = m_.head_dim;
  const BlockOffsets& o = blocks_[i];
  cpu::matmul_backward(datt_.data(), G(o.proj), dx_.data(), a.att.data(), P(o.proj), n_, c, c,
                       cpu::Output::kOverwrite);
  Zero(dq_), Zero(dk_), Zero(dv_);
  cpu::attention_backward(dq_.data(), dk_.data(), dv_.data(), datt_.data(), a.q.data(),
                          a.k.data(), a.v.data(), a.att.data(), a.lse.data(), a.lo.data(), b_, t_,
                          nh, hd, T(m_.AttentionScale()));
  cpu::rope_backward(dq_.data(), dq_.data(), rope_, b_, t_, nh, hd);
  cpu::rope_backward(dk_.data(), dk_.data(), rope_, b_, t_, nh, hd);
  if (m_.qk_norm) {
    cpu::rmsnorm_backward(dq_raw_.data(), dq_.data(), a.q_raw.data(), a.q_rstd.data(), n_ * nh, hd,
                          cpu::Output::kOverwrite);
    cpu::rmsnorm_backward(dk_raw_.data(), dk_.data(), a.k_raw.data(), a.k_rstd.data(), n_ * nh, hd,
                          cpu::Output::kOverwrite);
  } else {
    dq_raw_ = dq_, dk_raw_ = dk_;
  }
  ValueMixBackward(i, a);
  MergeQkv(dqkv_.data(), dq_raw_.data(), dk_raw_.data(), dv_raw_.data(), n_, c);
  cpu::matmul_backward(dln_.data(), G(o.qkv), dqkv_.data(), a.ln1.data(), P(o.qkv), n_, c, 3 * c,
                       cpu::Output::kOverwrite);
  cpu::rmsnorm_backward(dx_.data(), dln_.data(), a.x_in, a.rstd1.data(), n_, c);
}

// dv_ = d(mixed v) → dv_raw_ (and dv1_, value-embedding and λ grads).
template <class T>
void Gpt<T>::ValueMixBackward(int64_t i, LayerActs<T>& a) {
  int64_t nc = n_ * m_.model_dim;
  const BlockOffsets& o = blocks_[i];
  if (m_.value_residual) {
    Zero(dv_raw_);
    T lam = P(o.value_lambda)[0], da = 0, db = 0;
    const T* v1 = layers_[first_attn_].v_raw.data();
    cpu::MixGrads<T> g{dv_raw_.data(), dv1_.data(), &da, &db};
    cpu::residual_mix_backward(g, dv_.data(), a.v_raw.data(), T(1) - lam, v1, lam, nc);
    G(o.value_lambda)[0] += db - da;
    if (i == first_attn_) AddInto(dv_raw_, dv1_);
  } else if (m_.value_embeds > 0) {
    Zero(dv_raw_);
    const T* lam = P(o.ve_lambdas);
    T* dlam = G(o.ve_lambdas);
    bool has_ve = o.ve_table >= 0;
    if (has_ve) Zero(dve_);
    cpu::MixGrads<T> g{dv_raw_.data(), has_ve ? dve_.data() : nullptr, dlam,
                       has_ve ? dlam + 1 : nullptr};
    cpu::residual_mix_backward(g, dv_.data(), a.v_raw.data(), lam[0],
                               has_ve ? a.ve.data() : nullptr, lam[1], nc);
    if (has_ve) {
      cpu::embedding_backward(G(o.ve_table), dve_.data(), inputs_.data(), n_, m_.model_dim);
    }
  } else {
    dv_raw_ = dv_;
  }
}

// x_in = λ0·x_pre + λ1·x0; leaves dx_ = d(x_pre) and adds to dx0_.
template <class T>
void Gpt<T>::ShortcutBackward(int64_t i, LayerActs<T>& a) {
  const BlockOffsets& o = blocks_[i];
  const T* lam = P(o.lambdas);
  T* dlam = G(o.lambdas);
  Zero(dtmp_);
  cpu::MixGrads<T> g{dtmp_.data(), dx0_.data(), dlam, dlam + 1};
  cpu::Rounding r = StreamRounding();
  cpu::residual_mix_backward(g, dx_.data(), a.x_pre, cpu::mix_weight(lam[0], r), x0_.data(),
                             cpu::mix_weight(lam[1], r), n_ * m_.model_dim);
  std::swap(dx_, dtmp_);
}

template <class T>
void Gpt<T>::EmbedBackward() {
  int64_t c = m_.model_dim;
  const std::vector<T>* demb = &dx0_;
  if (m_.embed_norm) {
    cpu::rmsnorm_backward(dtmp_.data(), dx0_.data(), emb_.data(), emb_rstd_.data(), n_, c,
                          cpu::Output::kOverwrite);
    demb = &dtmp_;
  }
  cpu::embedding_backward(G(embed_), demb->data(), inputs_.data(), n_, c);
}

template void Gpt<float>::Backward(float);
template void Gpt<double>::Backward(double);

}  // namespace ablate
