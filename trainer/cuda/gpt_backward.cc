// CUDA GPT backward: the exact reverse of gpt.cc, step for step as trainer/model/gpt_backward.cc.
// The head's backward GEMMs already ran inside the forward's chunk loop (dln_ holds d(final
// norm output) and the head's weight gradient is accumulated), so this starts at the final norm.
// A bf16 stream's roundings pass gradients straight through, as on the CPU; the mixes' dx and dy
// use the bf16-rounded weights the forward used.
//
// Passes this file saves (NOTES.md item 12): the bf16 copy of dx that the MLP's and the
// projection's backward products read is written by dx's last writer as it stores dx (DxbIf,
// dx_copy_plan.h says which), not by a pass of its own; gradients summed over layers (dx0, d(v1))
// are overwritten by their first writer and each d(skip), written once, is overwritten, instead of
// zeroed each step.
#include <utility>

#include "trainer/cuda/attention.h"
#include "trainer/cuda/convert.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/gpt.h"
#include "trainer/cuda/gpt_acts.h"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/mlp_act.h"
#include "trainer/cuda/residual.h"
#include "trainer/cuda/rmsnorm.h"

namespace ablate::cuda {
namespace {

// The first writer of a gradient summed over layers overwrites it.
Output FirstWrites(bool first) { return first ? Output::kOverwrite : Output::kAdd; }

}  // namespace

bf16* Gpt::DxbIf(bool wanted) {
  dxb_current_ = wanted;
  return wanted ? dxb_ : nullptr;
}

Status Gpt::EnsureDxb() {
  if (dxb_current_) return {};
  ++dxb_conversions_;  // a writer of dx_ that did not know its reader: correct, one pass slower
  ABLATE_RETURN_IF_ERROR(to_bf16(ctx_, dxb_, dx_, n_ * m_.model_dim));
  dxb_current_ = true;
  return {};
}

template <class S>
Status Gpt::Backward() {
  int64_t nc = n_ * m_.model_dim;
  dxb_conversions_ = 0;
  ABLATE_RETURN_IF_ERROR(rmsnorm_backward<S>(ctx_, dx_, dln_, XLast<S>(), lf_rstd_, n_,
                                             m_.model_dim, Output::kOverwrite,
                                             DxbIf(dx_copies_.final_norm)));
  for (int64_t i = m_.n_layer - 1; i >= 0; --i) {
    ABLATE_RETURN_IF_ERROR(BlockBackward<S>(i));
    if (block_hook_) ABLATE_RETURN_IF_ERROR(block_hook_(i));
  }
  // Layer 0's input stream is x0: its gradient joins the shortcuts' sum, or is all of it.
  if (!m_.embed_shortcut) return EmbedBackward(dx_);
  ABLATE_RETURN_IF_ERROR(add_into(ctx_, dx0_, dx_, nc));
  return EmbedBackward(dx0_);
}

// On entry dx_ = d(x_out of layer i); on exit dx_ = d(x_prev of layer i).
template <class S>
Status Gpt::BlockBackward(int64_t i) {
  LayerActs& a = layers_[i];
  int64_t half = m_.n_layer / 2, nc = n_ * m_.model_dim;
  if (m_.unet_skips && i < half) {
    ABLATE_RETURN_IF_ERROR(add_into(ctx_, dx_, dskip_[i], nc, DxbIf(true)));
  }
  ABLATE_RETURN_IF_ERROR(MlpBackward<S>(i, a));
  if (m_.HasAttention(i)) ABLATE_RETURN_IF_ERROR(AttentionBackward<S>(i, a));
  if (m_.embed_shortcut) ABLATE_RETURN_IF_ERROR(ShortcutBackward<S>(i, a));
  if (m_.unet_skips && i >= half) ABLATE_RETURN_IF_ERROR(SkipBackward<S>(i, a));
  return {};
}

// x_out = x_mid + act(ln2 Wfcᵀ) Wprojᵀ; leaves dx_ = d(x_mid).
template <class S>
Status Gpt::MlpBackward(int64_t i, LayerActs& a) {
  int64_t c = m_.model_dim, f = m_.hidden_dim();
  const BlockOffsets& o = blocks_[i];
  ABLATE_RETURN_IF_ERROR(EnsureDxb());
  ABLATE_RETURN_IF_ERROR(mlp_act_forward(ctx_, act_, a.fc, n_ * f, m_.mlp_act));  // recompute
  ABLATE_RETURN_IF_ERROR(matmul_backward<bf16>(ctx_, dact_, G(o.mlp_proj), dxb_, act_,
                                               W(o.mlp_proj), n_, f, c, Output::kOverwrite));
  ABLATE_RETURN_IF_ERROR(mlp_act_backward(ctx_, dact_, dact_, a.fc, n_ * f, m_.mlp_act));
  ABLATE_RETURN_IF_ERROR(matmul_backward<float>(ctx_, dln_, G(o.fc), dact_, a.ln2, W(o.fc), n_, c,
                                                f, Output::kOverwrite));
  return rmsnorm_backward<S>(ctx_, dx_, dln_, a.stream<S>().x_mid, a.rstd2, n_, c, Output::kAdd,
                             DxbIf(dx_copies_.mlp_norm[size_t(i)]));
}

// x_mid = x_in + attention(norm(x_in)) Wprojᵀ; leaves dx_ = d(x_in).
template <class S>
Status Gpt::AttentionBackward(int64_t i, LayerActs& a) {
  int64_t c = m_.model_dim, nh = m_.n_head, hd = m_.head_dim;
  const BlockOffsets& o = blocks_[i];
  ABLATE_RETURN_IF_ERROR(EnsureDxb());
  ABLATE_RETURN_IF_ERROR(matmul_backward<bf16>(ctx_, datt_, G(o.proj), dxb_, a.att, W(o.proj), n_,
                                               c, c, Output::kOverwrite));
  ABLATE_RETURN_IF_ERROR(attention_backward(ctx_, dq_, dk_, dv_, datt_, a.q, a.k, a.v, a.att, a.lse,
                                            a.lo, d_rows_, b_, t_, nh, hd,
                                            float(m_.AttentionScale()), attention_));
  Result<const float*> dv_raw = ValueMixBackward(i, a);
  if (!dv_raw.ok()) return dv_raw.error();
  // One pass from attention's gradients to the product's: RoPE's transpose, the qk-norm
  // backward and the merge into d(qkv).
  QkvBackwardArgs q;
  q.dqkv = qkv_;
  q.dq = dq_;
  q.dk = dk_;
  q.dv = *dv_raw;
  q.q_raw = a.q_raw;
  q.k_raw = a.k_raw;
  q.q_rstd = a.q_rstd;
  q.k_rstd = a.k_rstd;
  q.n = n_;
  q.t = t_;
  q.nh = nh;
  q.hd = hd;
  q.qk_norm = m_.qk_norm;
  ABLATE_RETURN_IF_ERROR(qkv_backward(ctx_, q, rope_));
  ABLATE_RETURN_IF_ERROR(matmul_backward<float>(ctx_, dln_, G(o.qkv), qkv_, a.ln1, W(o.qkv), n_, c,
                                                3 * c, Output::kOverwrite));
  return rmsnorm_backward<S>(ctx_, dx_, dln_, a.stream<S>().x_in, a.rstd1, n_, c, Output::kAdd,
                             DxbIf(dx_copies_.attention_norm[size_t(i)]));
}

// dv_ = d(mixed v) → d(v_raw) (and d(v1), value-embedding and λ gradients). Returns where
// d(v_raw) is.
Result<const float*> Gpt::ValueMixBackward(int64_t i, LayerActs& a) {
  int64_t nc = n_ * m_.model_dim;
  const BlockOffsets& o = blocks_[i];
  if (m_.value_residual) {
    const float* lam = P(o.value_lambda);
    float* dlam = G(o.value_lambda);
    // v = (1 − λ)·v_raw + λ·v1, so dλ = Σ dv·v1 − Σ dv·v_raw.
    // Layers run from the last down, so the last attention layer writes d(v1) first.
    MixGrads g{dv_raw_,      Output::kOverwrite, dv1_, FirstWrites(i == last_attn_),
               {dlam, -1.f}, {dlam, 1.f}};
    ABLATE_RETURN_IF_ERROR(
        residual_mix_backward<bf16, bf16>(ctx_, g, dv_, a.v_raw, MixWeight::OneMinus(lam),
                                          layers_[first_attn_].v_raw, MixWeight::Param(lam), nc));
    if (i == first_attn_) ABLATE_RETURN_IF_ERROR(add_into(ctx_, dv_raw_, dv1_, nc));
    return static_cast<const float*>(dv_raw_);
  }
  if (m_.value_embeds > 0) {
    const float* lam = P(o.ve_lambdas);
    float* dlam = G(o.ve_lambdas);
    bool has_ve = o.ve_table >= 0;
    if (has_ve) {  // the rows are gathered again rather than kept per layer
      ABLATE_RETURN_IF_ERROR(
          embedding_forward(ctx_, ve_, P(o.ve_table), inputs_, n_, m_.model_dim));
    }
    MixGrads g{dv_raw_,
               Output::kOverwrite,
               has_ve ? dve_ : nullptr,
               Output::kOverwrite,
               {dlam, 1.f},
               has_ve ? GradTarget{dlam + 1, 1.f} : GradTarget{}};
    ABLATE_RETURN_IF_ERROR(
        residual_mix_backward<bf16, float>(ctx_, g, dv_, a.v_raw, MixWeight::Param(lam),
                                           has_ve ? ve_ : nullptr, MixWeight::Param(lam + 1), nc));
    if (has_ve) {
      ABLATE_RETURN_IF_ERROR(embedding_backward(ctx_, G(o.ve_table), dve_, plan_, m_.model_dim,
                                                embed_partials_, EmbeddingPartialRows(n_)));
    }
    return static_cast<const float*>(dv_raw_);
  }
  return static_cast<const float*>(dv_);
}

// x_in = λ0·x_pre + λ1·x0; leaves dx_ = d(x_pre) and adds to dx0_ (the last layer, the first
// to run, writes it).
template <class S>
Status Gpt::ShortcutBackward(int64_t i, LayerActs& a) {
  const float* lam = P(blocks_[i].lambdas);
  float* dlam = G(blocks_[i].lambdas);
  MixGrads g{dtmp_,
             Output::kOverwrite,
             dx0_,
             FirstWrites(i == m_.n_layer - 1),
             {dlam, 1.f},
             {dlam + 1, 1.f},
             DxbIf(dx_copies_.shortcut[size_t(i)])};
  ABLATE_RETURN_IF_ERROR(residual_mix_backward<S, S>(
      ctx_, g, dx_, a.stream<S>().x_pre, MixWeight::Param(lam).RoundedIf(StreamRounding()), X0<S>(),
      MixWeight::Param(lam + 1).RoundedIf(StreamRounding()), n_ * m_.model_dim));
  std::swap(dx_, dtmp_);
  return {};
}

// x_pre = x_prev + w·skip: dx passes through unchanged; the skip and w get their gradients.
// Layer src's skip feeds this layer alone, so its gradient is written here, not summed.
template <class S>
Status Gpt::SkipBackward(int64_t i, LayerActs& a) {
  int64_t half = m_.n_layer / 2, src = m_.n_layer - 1 - i;
  MixGrads g{
      nullptr, Output::kAdd, dskip_[src], Output::kOverwrite, {}, {G(skip_) + i - half, 1.f}};
  return residual_mix_backward<S, S>(
      ctx_, g, dx_, a.stream<S>().x_prev, MixWeight::Constant(1.f), layers_[src].stream<S>().x_out,
      MixWeight::Param(P(skip_) + i - half).RoundedIf(StreamRounding()), n_ * m_.model_dim);
}

// dx0 = d(x0), the embedding's output stream (after its norm, when there is one).
Status Gpt::EmbedBackward(const float* dx0) {
  int64_t c = m_.model_dim;
  const float* demb = dx0;
  if (m_.embed_norm) {
    ABLATE_RETURN_IF_ERROR(
        rmsnorm_backward<float>(ctx_, dtmp_, dx0, emb_, emb_rstd_, n_, c, Output::kOverwrite));
    demb = dtmp_;
  }
  return embedding_backward(ctx_, G(embed_), demb, plan_, c, embed_partials_,
                            EmbeddingPartialRows(n_));
}

// Run (gpt.cc) calls these for either stream.
template Status Gpt::Backward<float>();
template Status Gpt::Backward<bf16>();

}  // namespace ablate::cuda
