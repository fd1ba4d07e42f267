// CUDA GPT: construction, per-micro-batch staging and the forward pass (MODEL.md "Forward"),
// step for step as trainer/model/gpt.cc.
#include "trainer/cuda/gpt.h"

#include <algorithm>
#include <type_traits>

#include "trainer/cpu/attention.h"
#include "trainer/cuda/attention.h"
#include "trainer/cuda/convert.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/gpt_acts.h"
#include "trainer/cuda/head_rows.h"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/mlp_act.h"
#include "trainer/cuda/residual.h"
#include "trainer/cuda/rmsnorm.h"

namespace ablate::cuda {
namespace {}  // namespace

namespace {

BlockOffsets MapOffsets(const BlockOffsets& o, const DeviceLayout& dev) {
  auto map = [&](int64_t off) { return off < 0 ? off : dev.Map(off); };
  BlockOffsets d;
  d.lambdas = map(o.lambdas);
  d.qkv = map(o.qkv);
  d.proj = map(o.proj);
  d.value_lambda = map(o.value_lambda);
  d.ve_lambdas = map(o.ve_lambdas);
  d.fc = map(o.fc);
  d.mlp_proj = map(o.mlp_proj);
  d.ve_table = map(o.ve_table);
  return d;
}

// The attention kernels walk key ranges assuming lo never decreases along a sequence; every
// mask of MODEL.md guarantees it, and this keeps a future mask from breaking it silently.
Status CheckMonotone(const int32_t* lo, int64_t b, int64_t t) {
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t ti = 1; ti < t; ++ti) {
      if (lo[bi * t + ti] < lo[bi * t + ti - 1]) {
        return Error{"attention mask: first visible key decreases at token " + std::to_string(ti) +
                         " of sequence " + std::to_string(bi),
                     ""};
      }
    }
  }
  return {};
}

// int32 slots of one staging buffer, in units of n = B·T: inputs, targets, the embedding plan's
// ids, positions and offsets (n + 1), then one attention key-start row per distinct window.
struct StagingLayout {
  int64_t n;
  int64_t inputs() const { return 0; }
  int64_t targets() const { return n; }
  int64_t plan() const { return 2 * n; }
  int64_t lo(int64_t slot) const { return plan() + PackedEmbeddingPlanInts(n) + slot * n; }
  int64_t total(int64_t layers) const { return lo(layers); }
};

}  // namespace

Gpt::Gpt(CudaContext& ctx, const ModelConfig& m, int64_t b, int64_t t)
    : ctx_(ctx), m_(m), layout_(m), dev_(layout_), b_(b), t_(t), n_(b * t) {
  for (const BlockOffsets& o : ComputeBlockOffsets(m_, layout_)) {
    blocks_.push_back(MapOffsets(o, dev_));
  }
  embed_ = dev_.Map(layout_.Offset("embed.weight"));
  head_ = m_.tie_embeddings ? embed_ : dev_.Map(layout_.Offset("lm_head.weight"));
  if (m_.unet_skips) skip_ = dev_.Map(layout_.Offset("skip_weights"));
  first_attn_ = FirstAttentionLayer(m_);
  for (int64_t i = 0; i < m_.n_layer; ++i) {
    if (m_.HasAttention(i)) last_attn_ = i;
  }
  dx_copies_ = PlanDxCopies(m_);
  layers_.resize(size_t(m_.n_layer));
}

Gpt::~Gpt() = default;

Result<std::unique_ptr<Gpt>> Gpt::Create(CudaContext& ctx, const ModelConfig& m, int64_t b,
                                         int64_t t) {
  ABLATE_RETURN_IF_ERROR(ctx.MakeCurrent());
  std::unique_ptr<Gpt> gpt(new Gpt(ctx, m, b, t));
  Result<RopeTable> rope = rope_table(ctx, t, m.head_dim, m.rope, m.rope_base);
  if (!rope.ok()) return rope.error();
  gpt->rope_ = std::move(rope).value();
  ABLATE_RETURN_IF_ERROR(gpt->AllocateAll());
  return gpt;
}

template <class T>
Status Gpt::Alloc(T** out, int64_t n, const std::string& what) {
  DeviceBuffer<T> buf;
  ABLATE_RETURN_IF_ERROR(buf.Allocate(n, what));
  *out = buf.get();
  allocated_ += buf.bytes();
  if constexpr (std::is_same_v<T, float>) {
    f32_.push_back(std::move(buf));
  } else if constexpr (std::is_same_v<T, bf16>) {
    b16_.push_back(std::move(buf));
  } else {
    static_assert(std::is_same_v<T, int32_t>);
    i32_.push_back(std::move(buf));
  }
  return {};
}

Status Gpt::AllocateAll() {
  int64_t c = m_.model_dim, bt = n_, total = dev_.total();
  ABLATE_RETURN_IF_ERROR(Alloc(&params_, total, "parameters"));
  ABLATE_RETURN_IF_ERROR(Alloc(&grads_, total, "gradients"));
  ABLATE_RETURN_IF_ERROR(Alloc(&weights_, total, "bf16 weights"));
  ABLATE_CUDA_CHECK(cudaMemsetAsync(params_, 0, size_t(total) * 4, ctx_.stream()));
  ABLATE_RETURN_IF_ERROR(ZeroGrads());
  ABLATE_RETURN_IF_ERROR(RefreshWeights());
  ABLATE_RETURN_IF_ERROR(Alloc(&inputs_, bt, "inputs"));
  ABLATE_RETURN_IF_ERROR(Alloc(&targets_, bt, "targets"));
  ABLATE_RETURN_IF_ERROR(Alloc(&plan_packed_, PackedEmbeddingPlanInts(bt), "embedding plan"));
  ABLATE_RETURN_IF_ERROR(
      Alloc(&embed_partials_, EmbeddingPartialRows(bt) * c, "embedding backward partial sums"));
  for (Staging& st : staging_) {
    ABLATE_RETURN_IF_ERROR(
        st.host.Allocate(StagingLayout{bt}.total(m_.n_layer), "the input staging buffer"));
    ABLATE_RETURN_IF_ERROR(st.copied.Create());
  }
  lo_slots_.assign(size_t(m_.n_layer), nullptr);
  for (int32_t*& slot : lo_slots_) ABLATE_RETURN_IF_ERROR(Alloc(&slot, bt, "attention key starts"));
  ABLATE_RETURN_IF_ERROR(Alloc(&emb_, bt * c, "embedding"));
  ABLATE_RETURN_IF_ERROR(Alloc(&emb_rstd_, bt, "embedding norm"));
  if (m_.Bf16Stream()) {
    ABLATE_RETURN_IF_ERROR(Alloc(&x0b_, bt * c, "x0"));
  } else {
    x0_ = emb_;
    if (m_.embed_norm) ABLATE_RETURN_IF_ERROR(Alloc(&x0_, bt * c, "x0"));
  }
  for (int64_t i = 0; i < m_.n_layer; ++i) ABLATE_RETURN_IF_ERROR(AllocateLayer(i, layers_[i]));
  ABLATE_RETURN_IF_ERROR(Alloc(&lf_, bt * c, "final norm"));
  ABLATE_RETURN_IF_ERROR(Alloc(&lf_rstd_, bt, "final norm"));
  ABLATE_RETURN_IF_ERROR(Alloc(&losses_, bt, "losses"));
  ABLATE_RETURN_IF_ERROR(loss_acc_.Allocate(1, "loss accumulator"));
  allocated_ += loss_acc_.bytes();
  ABLATE_CUDA_CHECK(cudaMemsetAsync(loss_acc_.get(), 0, sizeof(double), ctx_.stream()));
  LmHeadScratch& hs = head_scratch_;
  HeadRows head_rows = PlanHeadRows(bt, m_.vocab_size);
  hs.chunk_rows = head_rows.chunk;
  hs.group_rows = head_rows.group;
  ABLATE_RETURN_IF_ERROR(Alloc(&hs.logits, hs.chunk_rows * m_.vocab_size, "head logits"));
  ABLATE_RETURN_IF_ERROR(Alloc(&hs.dlogits, hs.group_rows * m_.vocab_size, "dlogits"));
  ABLATE_RETURN_IF_ERROR(Alloc(&qkv_, bt * 3 * c, "qkv"));
  ABLATE_RETURN_IF_ERROR(Alloc(&act_, bt * m_.hidden_dim(), "mlp activation"));
  if (m_.value_embeds > 0) ABLATE_RETURN_IF_ERROR(Alloc(&ve_, bt * c, "value embedding rows"));
  return AllocateBackward();
}

Status Gpt::AllocateLayer(int64_t i, LayerActs& a) {
  int64_t c = m_.model_dim, bt = n_, f = m_.hidden_dim(), nh = m_.n_head;
  std::string p = "blocks." + std::to_string(i) + ".";
  ABLATE_RETURN_IF_ERROR(m_.Bf16Stream() ? AllocateStream(i, a.b16) : AllocateStream(i, a.f32));
  if (m_.HasAttention(i)) {
    ABLATE_RETURN_IF_ERROR(Alloc(&a.ln1, bt * c, p + "ln1"));
    ABLATE_RETURN_IF_ERROR(Alloc(&a.rstd1, bt, p + "rstd1"));
    for (bf16** x : {&a.v_raw, &a.q, &a.k, &a.att}) {
      ABLATE_RETURN_IF_ERROR(Alloc(x, bt * c, p + "attn"));
    }
    if (m_.qk_norm) {  // the norm's inputs, for its backward
      for (bf16** x : {&a.q_raw, &a.k_raw}) ABLATE_RETURN_IF_ERROR(Alloc(x, bt * c, p + "attn"));
    }
    a.v = a.v_raw;
    if (m_.value_residual || m_.value_embeds > 0)
      ABLATE_RETURN_IF_ERROR(Alloc(&a.v, bt * c, p + "v"));
    ABLATE_RETURN_IF_ERROR(Alloc(&a.q_rstd, bt * nh, p + "q_rstd"));
    ABLATE_RETURN_IF_ERROR(Alloc(&a.k_rstd, bt * nh, p + "k_rstd"));
    ABLATE_RETURN_IF_ERROR(Alloc(&a.lse, bt * nh, p + "lse"));
  }
  ABLATE_RETURN_IF_ERROR(Alloc(&a.ln2, bt * c, p + "ln2"));
  ABLATE_RETURN_IF_ERROR(Alloc(&a.rstd2, bt, p + "rstd2"));
  return Alloc(&a.fc, bt * f, p + "fc");
}

template <class S>
Status Gpt::AllocateStream(int64_t i, LayerStream<S>& s) {
  int64_t nc = n_ * m_.model_dim;
  std::string p = "blocks." + std::to_string(i) + ".";
  if (m_.unet_skips && i >= m_.n_layer / 2) {
    ABLATE_RETURN_IF_ERROR(Alloc(&s.skip_sum, nc, p + "skip_sum"));
  }
  if (m_.embed_shortcut) ABLATE_RETURN_IF_ERROR(Alloc(&s.mixed, nc, p + "mixed"));
  if (m_.HasAttention(i)) ABLATE_RETURN_IF_ERROR(Alloc(&s.attn_out, nc, p + "attn_out"));
  return Alloc(&s.x_out, nc, p + "x_out");
}

Status Gpt::AllocateBackward() {
  int64_t c = m_.model_dim, bt = n_, nc = bt * c;
  for (float** d : {&dx_, &dtmp_, &dln_, &dq_, &dk_, &dv_, &dv_raw_}) {
    ABLATE_RETURN_IF_ERROR(Alloc(d, nc, "activation gradients"));
  }
  // d(x0) sums the shortcuts' gradients; without them it is dx_ itself (gpt_backward.cc).
  if (m_.embed_shortcut) ABLATE_RETURN_IF_ERROR(Alloc(&dx0_, nc, "d(x0)"));
  if (m_.value_residual) ABLATE_RETURN_IF_ERROR(Alloc(&dv1_, nc, "d(v1)"));
  if (m_.value_embeds > 0) ABLATE_RETURN_IF_ERROR(Alloc(&dve_, nc, "d(value embedding rows)"));
  ABLATE_RETURN_IF_ERROR(Alloc(&dxb_, nc, "bf16 stream gradient"));
  ABLATE_RETURN_IF_ERROR(Alloc(&datt_, nc, "d(attention output)"));
  ABLATE_RETURN_IF_ERROR(Alloc(&dact_, bt * m_.hidden_dim(), "d(mlp activation)"));
  ABLATE_RETURN_IF_ERROR(Alloc(&d_rows_, bt * m_.n_head, "attention row sums"));
  if (m_.unet_skips) {
    dskip_.assign(size_t(m_.n_layer / 2), nullptr);
    for (float*& d : dskip_) ABLATE_RETURN_IF_ERROR(Alloc(&d, nc, "d(skip)"));
  }
  return {};
}

Status Gpt::SetParams(const float* host) {
  ABLATE_RETURN_IF_ERROR(dev_.Upload(ctx_, params_, host));
  return RefreshWeights();
}

Status Gpt::GetParams(float* host) { return dev_.Download(ctx_, host, params_); }

Status Gpt::GetGrads(float* host) { return dev_.Download(ctx_, host, grads_); }

Status Gpt::ZeroGrads() {
  ABLATE_CUDA_CHECK(cudaMemsetAsync(grads_, 0, size_t(dev_.total()) * 4, ctx_.stream()));
  return {};
}

Status Gpt::RefreshWeights() { return to_bf16(ctx_, weights_, params_, dev_.total()); }

Result<float> Gpt::TakeLoss() {
  double loss = 0.0;
  ABLATE_RETURN_IF_ERROR(ctx_.ToHost(&loss, loss_acc_.get(), sizeof(double)));
  ABLATE_CUDA_CHECK(cudaMemsetAsync(loss_acc_.get(), 0, sizeof(double), ctx_.stream()));
  return float(loss);
}

Status Gpt::MoveLoss(float* dst) { return loss_move(ctx_, dst, loss_acc_.get()); }

Status Gpt::GetLosses(float* host) { return ctx_.ToHost(host, losses_, n_ * 4); }

// ---- Staging ------------------------------------------------------------------------------

// The host never waits for the device here unless it is two micro-batches ahead: it fills the
// staging buffer whose copies were queued two Stage calls ago, once those copies are done.
// Copies from pinned memory are true DMA, so no call below blocks on the stream.
Status Gpt::Stage(const int32_t* tokens, const std::vector<int64_t>& windows, bool train) {
  if (int64_t(windows.size()) != m_.n_layer) {
    return Error{"forward: " + std::to_string(windows.size()) + " window sizes for " +
                     std::to_string(m_.n_layer) + " layers",
                 ""};
  }
  Staging& st = staging_[stages_++ % 2];
  if (st.used) ABLATE_RETURN_IF_ERROR(ctx_.Wait(st.copied));
  StagingLayout at{n_};
  int32_t* host = st.host.get();
  int32_t* inputs = host + at.inputs();
  int32_t* targets = host + at.targets();
  int64_t tp1 = t_ + 1;
  for (int64_t bi = 0; bi < b_; ++bi) {
    for (int64_t ti = 0; ti < t_; ++ti) {
      inputs[bi * t_ + ti] = tokens[bi * tp1 + ti];
      targets[bi * t_ + ti] = tokens[bi * tp1 + ti + 1];
    }
  }
  ABLATE_RETURN_IF_ERROR(ctx_.ToDevice(inputs_, inputs, n_ * 4));
  ABLATE_RETURN_IF_ERROR(ctx_.ToDevice(targets_, targets, n_ * 4));
  if (train) {
    EmbeddingPlan plan = BuildEmbeddingPlan(inputs, n_);
    int64_t ints = PackEmbeddingPlan(plan, host + at.plan());
    ABLATE_RETURN_IF_ERROR(ctx_.ToDevice(plan_packed_, host + at.plan(), ints * 4));
    plan_ = DeviceEmbeddingPlanAt(plan_packed_, plan);
  }
  std::vector<int64_t> staged;  // window of each filled slot
  for (int64_t i = 0; i < m_.n_layer; ++i) {
    if (!m_.HasAttention(i)) continue;
    Result<int32_t*> lo =
        StageWindow(tokens, host + at.lo(int64_t(staged.size())), windows[i], staged);
    if (!lo.ok()) return lo.error();
    layers_[i].lo = *lo;
  }
  ABLATE_RETURN_IF_ERROR(st.copied.Record(ctx_.stream()));
  st.used = true;
  return {};
}

// lo_host: the staging row for a new slot (used only when `window` is not staged yet).
Result<int32_t*> Gpt::StageWindow(const int32_t* tokens, int32_t* lo_host, int64_t window,
                                  std::vector<int64_t>& staged) {
  for (size_t s = 0; s < staged.size(); ++s) {
    if (staged[s] == window) return lo_slots_[s];
  }
  size_t slot = staged.size();  // < n_layer: at most one new window per layer
  cpu::AttentionMask mask{m_.doc_masking, m_.bos_token, window, m_.window.block_tokens};
  cpu::attention_key_start(lo_host, tokens, t_ + 1, b_, t_, mask);
  ABLATE_RETURN_IF_ERROR(CheckMonotone(lo_host, b_, t_));
  ABLATE_RETURN_IF_ERROR(ctx_.ToDevice(lo_slots_[slot], lo_host, n_ * 4));
  staged.push_back(window);
  return lo_slots_[slot];
}

// ---- Forward ------------------------------------------------------------------------------

Status Gpt::Forward(const int32_t* tokens, const std::vector<int64_t>& windows, int64_t divisor) {
  return Run(tokens, windows, divisor, false);
}

Status Gpt::ForwardBackward(const int32_t* tokens, const std::vector<int64_t>& windows,
                            int64_t divisor) {
  return Run(tokens, windows, divisor, true);
}

Status Gpt::Run(const int32_t* tokens, const std::vector<int64_t>& windows, int64_t divisor,
                bool train) {
  ABLATE_RETURN_IF_ERROR(Stage(tokens, windows, train));
  return m_.Bf16Stream() ? RunStream<bf16>(divisor, train) : RunStream<float>(divisor, train);
}

template <class S>
Status Gpt::RunStream(int64_t divisor, bool train) {
  ABLATE_RETURN_IF_ERROR(EmbedForward<S>());
  const S* x = X0<S>();
  for (int64_t i = 0; i < m_.n_layer; ++i) {
    Result<const S*> next = BlockForward<S>(i, x);
    if (!next.ok()) return next.error();
    x = *next;
  }
  ABLATE_RETURN_IF_ERROR(HeadForward<S>(x, divisor, train));
  return train ? Backward<S>() : Status();
}

// x0 = norm(embedding rows), or the rows themselves: emb_ for an fp32 stream (which the backward
// does not read then), their bf16 rounding for a bf16 one.
template <class S>
Status Gpt::EmbedForward() {
  int64_t c = m_.model_dim;
  ABLATE_RETURN_IF_ERROR(embedding_forward(ctx_, emb_, P(embed_), inputs_, n_, c));
  if (m_.embed_norm) return rmsnorm_forward<float, S>(ctx_, X0<S>(), emb_rstd_, emb_, n_, c);
  if constexpr (std::is_same_v<S, bf16>) return to_bf16(ctx_, x0b_, emb_, n_ * c);
  return {};
}

Rounding Gpt::StreamRounding() const { return m_.Bf16Stream() ? Rounding::kBf16 : Rounding::kNone; }

// out = x + act · wᵀ. A bf16 stream writes the product to bf16 (the qkv_ scratch, free after the
// split) and adds it rounding the sum, as two bf16 tensors add in PyTorch; fp32 adds in the GEMM,
// which reads x as its C and writes out as its D (no copy of x first).
template <class S>
Status Gpt::AddBranch(S* out, const S* x, const bf16* act, const bf16* w, int64_t in) {
  int64_t c = m_.model_dim;
  if constexpr (std::is_same_v<S, float>) {
    return matmul_forward_add(ctx_, out, x, act, w, n_, in, c);
  } else {
    ABLATE_RETURN_IF_ERROR(matmul_forward<bf16>(ctx_, qkv_, act, w, n_, in, c));
    return residual_mix_forward<bf16, bf16, bf16>(ctx_, out, x, MixWeight::Constant(1.f), qkv_,
                                                  MixWeight::Constant(1.f), n_ * c,
                                                  Rounding::kBf16);
  }
}

template <class S>
Result<const S*> Gpt::BlockForward(int64_t i, const S* x) {
  LayerActs& a = layers_[i];
  LayerStream<S>& st = a.stream<S>();
  int64_t nc = n_ * m_.model_dim, half = m_.n_layer / 2;
  st.x_prev = x;
  if (m_.unet_skips && i >= half) {
    const S* skip = layers_[m_.n_layer - 1 - i].stream<S>().x_out;
    MixWeight w = MixWeight::Param(P(skip_) + i - half).RoundedIf(StreamRounding());
    ABLATE_RETURN_IF_ERROR(residual_mix_forward<S, S, S>(
        ctx_, st.skip_sum, x, MixWeight::Constant(1.f), skip, w, nc, StreamRounding()));
    x = st.skip_sum;
  }
  st.x_pre = x;
  if (m_.embed_shortcut) {
    const float* lam = P(blocks_[i].lambdas);
    Rounding r = StreamRounding();
    ABLATE_RETURN_IF_ERROR(
        residual_mix_forward<S, S, S>(ctx_, st.mixed, x, MixWeight::Param(lam).RoundedIf(r),
                                      X0<S>(), MixWeight::Param(lam + 1).RoundedIf(r), nc, r));
    x = st.mixed;
  }
  st.x_in = x;
  st.x_mid = x;
  if (m_.HasAttention(i)) ABLATE_RETURN_IF_ERROR(AttentionForward<S>(i, a));
  ABLATE_RETURN_IF_ERROR(MlpForward<S>(i, a));
  return static_cast<const S*>(st.x_out);
}

template <class S>
Status Gpt::AttentionForward(int64_t i, LayerActs& a) {
  int64_t c = m_.model_dim;
  const BlockOffsets& o = blocks_[i];
  LayerStream<S>& st = a.stream<S>();
  ABLATE_RETURN_IF_ERROR(rmsnorm_forward<S, bf16>(ctx_, a.ln1, a.rstd1, st.x_in, n_, c));
  ABLATE_RETURN_IF_ERROR(matmul_forward<bf16>(ctx_, qkv_, a.ln1, W(o.qkv), n_, c, 3 * c));
  // One pass from the product to attention's q, k, v: split, qk-norm, RoPE, value mix.
  QkvForwardArgs q;
  q.qkv = qkv_;
  q.q_raw = a.q_raw;
  q.k_raw = a.k_raw;
  q.v_raw = a.v_raw;
  q.q = a.q;
  q.k = a.k;
  q.v = a.v;
  q.q_rstd = a.q_rstd;
  q.k_rstd = a.k_rstd;
  q.n = n_;
  q.t = t_;
  q.nh = m_.n_head;
  q.hd = m_.head_dim;
  q.qk_norm = m_.qk_norm;
  ValueMixOf(i, q);
  ABLATE_RETURN_IF_ERROR(qkv_forward(ctx_, q, rope_));
  ABLATE_RETURN_IF_ERROR(attention_forward(ctx_, a.att, a.lse, a.q, a.k, a.v, a.lo, b_, t_,
                                           m_.n_head, m_.head_dim, float(m_.AttentionScale()),
                                           attention_));
  ABLATE_RETURN_IF_ERROR(AddBranch<S>(st.attn_out, st.x_in, a.att, W(o.proj), c));
  st.x_mid = st.attn_out;
  return {};
}

// v = (1 − λ)·v_raw + λ·v1 (value residual) or λ0·v_raw + λ1·ve (value embeddings; λ0·v_raw in
// layers without a table), in fp32, stored as bf16.
void Gpt::ValueMixOf(int64_t i, QkvForwardArgs& q) {
  const BlockOffsets& o = blocks_[i];
  if (m_.value_residual) {
    const float* lam = P(o.value_lambda);
    q.mix = ValueMixKind::kResidual;
    q.a = MixWeight::OneMinus(lam);
    q.b = MixWeight::Param(lam);
    q.v1 = layers_[first_attn_].v_raw;
  } else if (m_.value_embeds > 0) {
    const float* lam = P(o.ve_lambdas);
    q.mix = ValueMixKind::kEmbed;
    q.a = MixWeight::Param(lam);
    q.b = MixWeight::Param(lam + 1);
    if (o.ve_table >= 0) {  // the rows are read from the table by id, not gathered first
      q.ve_table = P(o.ve_table);
      q.ids = inputs_;
    }
  }
}

template <class S>
Status Gpt::MlpForward(int64_t i, LayerActs& a) {
  int64_t c = m_.model_dim, f = m_.hidden_dim();
  const BlockOffsets& o = blocks_[i];
  LayerStream<S>& st = a.stream<S>();
  ABLATE_RETURN_IF_ERROR(rmsnorm_forward<S, bf16>(ctx_, a.ln2, a.rstd2, st.x_mid, n_, c));
  ABLATE_RETURN_IF_ERROR(matmul_forward<bf16>(ctx_, a.fc, a.ln2, W(o.fc), n_, c, f));
  ABLATE_RETURN_IF_ERROR(mlp_act_forward(ctx_, act_, a.fc, n_ * f, m_.mlp_act));
  return AddBranch<S>(st.x_out, st.x_mid, act_, W(o.mlp_proj), f);
}

template <class S>
Status Gpt::HeadForward(const S* x, int64_t divisor, bool train) {
  int64_t c = m_.model_dim, v = m_.vocab_size;
  XLast<S>() = x;
  // The head input is bf16 (a GEMM operand) with either activation_dtype.
  ABLATE_RETURN_IF_ERROR(rmsnorm_forward<S, bf16>(ctx_, lf_, lf_rstd_, x, n_, c));
  if (train) {
    float dloss = (1.f / float(divisor)) / float(n_);  // as the CPU: scale / n
    ABLATE_RETURN_IF_ERROR(lm_head_forward_backward(ctx_, losses_, dln_, G(head_), lf_, W(head_),
                                                    targets_, n_, c, v, m_.softcap, dloss,
                                                    head_scratch_));
  } else {
    ABLATE_RETURN_IF_ERROR(lm_head_forward(ctx_, losses_, lf_, W(head_), targets_, n_, c, v,
                                           m_.softcap, head_scratch_));
  }
  return loss_accumulate(ctx_, loss_acc_.get(), losses_, n_, divisor);
}

}  // namespace ablate::cuda
