// The per-op table's rows for the transformer layers' ops (op_rows.h): the block products, the
// norms, the MLP activation, the residual stream's passes and the q/k/v plumbing around attention.
#include <functional>

#include "bench/trainer_gpu/op_rows.h"
#include "trainer/cuda/convert.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/mlp_act.h"
#include "trainer/cuda/qkv.h"
#include "trainer/cuda/residual.h"
#include "trainer/cuda/rmsnorm.h"
#include "trainer/cuda/rope.h"

namespace ablate::cuda::gpu_bench {
namespace {

// Trained scalars (λs, skip weights) on the device, and their gradients.
struct Scalars {
  DeviceBuffer<float> p, g;  // (8) each
};

Scalars MakeScalars(CudaContext& ctx) {
  Scalars s{Buffer<float>(8, "scalars"), Buffer<float>(8, "scalar gradients")};
  std::vector<float> half(8, 0.5f), zero(8, 0.f);
  Check(ctx.ToDevice(s.p.get(), half.data(), 8 * 4), "scalars");
  Check(ctx.ToDevice(s.g.get(), zero.data(), 8 * 4), "scalar gradients");
  return s;
}

// BenchQkvOps's buffers.
struct QkvOperands {
  RopeTable rope;
  DeviceBuffer<bf16> qkv, q, k, v, vout, q_raw, k_raw;  // (N, 3C), then (N, C) each
  DeviceBuffer<float> ve, dq, dk, dv, dv_raw, dve;      // (N, C) each
  DeviceBuffer<float> q_rstd, k_rstd;                   // (N·NH)
  DeviceBuffer<int32_t> ids;  // (N): row i of ve as the value-embedding table's row for token i
  Scalars lam;
};

DeviceBuffer<int32_t> Iota(CudaContext& ctx, int64_t n) {
  std::vector<int32_t> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[size_t(i)] = int32_t(i);
  DeviceBuffer<int32_t> b = Buffer<int32_t>(n, "ids");
  Check(ctx.ToDevice(b.get(), host.data(), n * 4), "ids");
  return b;
}

QkvOperands MakeQkvOperands(CudaContext& ctx, const StepSetup& s) {
  int64_t nc = s.b * s.t * s.m.model_dim, nh = s.b * s.t * s.m.n_head;
  return {Take(rope_table(ctx, s.t, s.m.head_dim, s.m.rope, s.m.rope_base), "rope table"),
          Filled<bf16>(ctx, 3 * nc, 41, "qkv"),
          Buffer<bf16>(nc, "q"),
          Buffer<bf16>(nc, "k"),
          Buffer<bf16>(nc, "v"),
          Buffer<bf16>(nc, "mixed v"),
          Buffer<bf16>(nc, "q_raw"),
          Buffer<bf16>(nc, "k_raw"),
          Filled<float>(ctx, nc, 42, "ve"),
          Filled<float>(ctx, nc, 43, "dq"),
          Filled<float>(ctx, nc, 44, "dk"),
          Filled<float>(ctx, nc, 45, "dv"),
          Buffer<float>(nc, "dv_raw"),
          Filled<float>(ctx, nc, 46, "dve"),
          Filled<float>(ctx, nh, 47, "q_rstd"),
          Filled<float>(ctx, nh, 48, "k_rstd"),
          Iota(ctx, s.b * s.t),
          MakeScalars(ctx)};
}

// The single passes that Gpt runs as one fused pass (qkv.h) since 2026-12-07: timed, shown with
// the count they had, out of the sum; the fused rows below are what the step runs.
constexpr const char* kFused = "replaced by the fused qkv pass";

// The fused forward's arguments as AttentionForward builds them for a layer with (ve_table) or
// without a value-embedding table.
QkvForwardArgs FusedForwardArgs(const StepSetup& s, QkvOperands& x, bool ve_table) {
  QkvForwardArgs a;
  a.qkv = x.qkv.get();
  a.v_raw = x.v.get();
  a.q = x.q.get();
  a.k = x.k.get();
  a.v = x.v.get();
  a.n = s.b * s.t;
  a.t = s.t;
  a.nh = s.m.n_head;
  a.hd = s.m.head_dim;
  a.qk_norm = s.m.qk_norm;
  if (a.qk_norm) {
    a.q_raw = x.q_raw.get();
    a.k_raw = x.k_raw.get();
    a.q_rstd = x.q_rstd.get();
    a.k_rstd = x.k_rstd.get();
  }
  const float* p = x.lam.p.get();
  if (s.m.value_residual) {
    a.mix = ValueMixKind::kResidual;
    a.a = MixWeight::OneMinus(p);
    a.b = MixWeight::Param(p);
    a.v1 = x.k_raw.get();
  } else if (s.m.value_embeds > 0) {
    a.mix = ValueMixKind::kEmbed;
    a.a = MixWeight::Param(p);
    a.b = MixWeight::Param(p + 1);
    if (ve_table) {
      a.ve_table = x.ve.get();
      a.ids = x.ids.get();
    }
  }
  if (a.mix != ValueMixKind::kNone) a.v = x.vout.get();
  return a;
}

// Bytes per element of (N, C) the fused forward reads and writes: the product (6), q, k and
// v_raw (6), with qk-norm q_raw and k_raw (4), with a mix v (2) and v1 (2) or a table row (4).
double FusedForwardBytes(const QkvForwardArgs& a) {
  double b = 12 + (a.qk_norm ? 4 : 0);
  if (a.mix == ValueMixKind::kResidual) b += 4;
  if (a.mix == ValueMixKind::kEmbed) b += a.ve_table != nullptr ? 6 : 2;
  return b;
}

// RoPE's cos and sin tables (T, HD/2), read once per call.
double RopeTableBytes(const StepSetup& s) { return double(s.t) * double(s.m.head_dim) * 4; }

// BenchQkvOps's forward rows (AttentionForward, ValueMixForward).
void QkvForwardRows(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k,
                    QkvOperands& x) {
  int64_t n = s.b * s.t, c = s.m.model_dim, nh = s.m.n_head, hd = s.m.head_dim, nc = n * c;
  const float* p = x.lam.p.get();
  double b = double(nc), tables = RopeTableBytes(s);
  const float* no_ve = nullptr;
  // AttentionForward.
  MemRow(ctx, table, "split_qkv (N,3C) → q, k, v bf16", b * 12, {k.attention, kFused},
         [&] { return split_qkv(ctx, x.q.get(), x.k.get(), x.v.get(), x.qkv.get(), n, c); });
  MemRow(ctx, table, "rope fwd (N,C) bf16", b * 4 + tables, {2 * k.attention, kFused},
         [&] { return rope_forward<bf16>(ctx, x.q.get(), x.q.get(), x.rope, s.b, s.t, nh, hd); });
  // ValueMixForward: v = λ0·v_raw + λ1·ve in the value-embedding layers, λ0·v_raw in the rest.
  MemRow(ctx, table, "v mix fwd (N,C) bf16 + fp32 ve → bf16", b * 8, {k.ve, kFused}, [&] {
    return residual_mix_forward<bf16, bf16, float>(
        ctx, x.vout.get(), x.v.get(), MixWeight::Param(p), x.ve.get(), MixWeight::Param(p + 1), nc);
  });
  MemRow(ctx, table, "v mix fwd (N,C) bf16, no ve: λ·v", b * 4, {k.ve_mix - k.ve, kFused}, [&] {
    return residual_mix_forward<bf16, bf16, float>(
        ctx, x.vout.get(), x.v.get(), MixWeight::Param(p), no_ve, MixWeight::Param(p + 1), nc);
  });
  MemRow(ctx, table, "v mix fwd (N,C) bf16, value residual", b * 6,
         {k.value_residual * k.attention, kFused}, [&] {
           return residual_mix_forward<bf16, bf16, bf16>(ctx, x.vout.get(), x.v.get(),
                                                         MixWeight::OneMinus(p), x.k.get(),
                                                         MixWeight::Param(p), nc);
         });
  // The fused pass AttentionForward runs (qkv.h): split, qk-norm, RoPE and the v mix.
  for (bool ve_table : {true, false}) {
    QkvForwardArgs a = FusedForwardArgs(s, x, ve_table);
    if (ve_table && a.ve_table == nullptr) continue;  // no table in this model
    MemRow(ctx, table,
           ve_table ? "qkv fused fwd (N,3C) → q, k, v, ve table" : "qkv fused fwd (N,3C) → q, k, v",
           b * FusedForwardBytes(a) + tables, {ve_table ? k.ve : k.attention - k.ve},
           [&] { return qkv_forward(ctx, a, x.rope); });
  }
}

// BenchQkvOps's backward rows (AttentionBackward, ValueMixBackward).
void QkvBackwardRows(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k,
                     QkvOperands& x) {
  int64_t n = s.b * s.t, c = s.m.model_dim, nh = s.m.n_head, hd = s.m.head_dim, nc = n * c;
  const float* p = x.lam.p.get();
  float* g = x.lam.g.get();
  double b = double(nc), tables = RopeTableBytes(s);
  const float* no_ve = nullptr;
  // AttentionBackward.
  MemRow(
      ctx, table, "rope bwd (N,C) fp32, in place", b * 8 + tables, {2 * k.attention, kFused},
      [&] { return rope_backward<float>(ctx, x.dq.get(), x.dq.get(), x.rope, s.b, s.t, nh, hd); });
  // ValueMixBackward.
  MemRow(ctx, table, "v mix bwd (N,C): dv_raw =, dve =, dλ", b * 18, {k.ve}, [&] {
    MixGrads mg{x.dv_raw.get(),     Output::kOverwrite, x.dve.get(),
                Output::kOverwrite, {g, 1.f},           {g + 1, 1.f}};
    return residual_mix_backward<bf16, float>(ctx, mg, x.dv.get(), x.v.get(), MixWeight::Param(p),
                                              x.ve.get(), MixWeight::Param(p + 1), nc);
  });
  MemRow(ctx, table, "v mix bwd (N,C), no ve: dv_raw =, dλ", b * 10, {k.ve_mix - k.ve}, [&] {
    MixGrads mg{x.dv_raw.get(), Output::kOverwrite, nullptr, Output::kOverwrite, {g, 1.f}, {}};
    return residual_mix_backward<bf16, float>(ctx, mg, x.dv.get(), x.v.get(), MixWeight::Param(p),
                                              no_ve, MixWeight::Param(p + 1), nc);
  });
  MemRow(ctx, table, "v mix bwd (N,C), value residual", b * 20, {k.value_residual * k.attention},
         [&] {
           MixGrads mg{x.dv_raw.get(), Output::kOverwrite, x.dve.get(),
                       Output::kAdd,   {g, -1.f},          {g, 1.f}};
           return residual_mix_backward<bf16, bf16>(ctx, mg, x.dv.get(), x.v.get(),
                                                    MixWeight::OneMinus(p), x.k.get(),
                                                    MixWeight::Param(p), nc);
         });
  MemRow(ctx, table, "merge_qkv fp32 dq, dk, dv → (N,3C) bf16", b * 18, {k.attention, kFused},
         [&] { return merge_qkv(ctx, x.qkv.get(), x.dq.get(), x.dk.get(), x.dv.get(), n, c); });
  // The fused pass AttentionBackward runs: RoPE's transpose, the qk-norm backward, the merge.
  QkvBackwardArgs a;
  a.dqkv = x.qkv.get();
  a.dq = x.dq.get();
  a.dk = x.dk.get();
  a.dv = x.dv_raw.get();
  a.n = n;
  a.t = s.t;
  a.nh = nh;
  a.hd = hd;
  a.qk_norm = s.m.qk_norm;
  if (a.qk_norm) {
    a.q_raw = x.q_raw.get();
    a.k_raw = x.k_raw.get();
    a.q_rstd = x.q_rstd.get();
    a.k_rstd = x.k_rstd.get();
  }
  // dq, dk, dv (12), q_raw and k_raw with qk-norm (4), d(qkv) (6).
  MemRow(ctx, table, "qkv fused bwd dq, dk, dv → (N,3C) bf16",
         b * (18 + (a.qk_norm ? 4 : 0)) + tables, {k.attention},
         [&] { return qkv_backward(ctx, a, x.rope); });
}

}  // namespace

void BenchGemms(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k) {
  int64_t n = s.b * s.t, c = s.m.model_dim, f = s.m.hidden_dim();
  DeviceBuffer<bf16> x = Filled<bf16>(ctx, n * f, 3, "x"), u = Filled<bf16>(ctx, n * f, 6, "u"),
                     w = Filled<bf16>(ctx, 3 * c * f, 4, "w"), y = Buffer<bf16>(n * f, "y");
  DeviceBuffer<float> acc = Filled<float>(ctx, n * c, 5, "acc"),
                      dw = Filled<float>(ctx, c * f, 7, "dw");
  auto gemm = [&](const char* name, double flops, PerStep per, const std::function<Status()>& fn) {
    table.TryAdd(name, TryDeviceMs(ctx, 2, 10, fn), flops, 0, per);
  };
  double nc = double(n) * double(c);
  // AttentionForward (qkv, proj), MlpForward (fc, mlp).
  gemm("qkv  x(N,C)·W(3C,C)ᵀ → bf16", 6 * nc * c, {k.attention},
       [&] { return matmul_forward<bf16>(ctx, y.get(), x.get(), w.get(), n, c, 3 * c); });
  gemm("proj x(N,C)·W(C,C)ᵀ += fp32", 2 * nc * c, {k.attention}, [&] {
    return matmul_forward<float>(ctx, acc.get(), x.get(), w.get(), n, c, c, Output::kAdd);
  });
  gemm("fc   x(N,C)·W(F,C)ᵀ → bf16", 2 * nc * f, {k.layers},
       [&] { return matmul_forward<bf16>(ctx, y.get(), x.get(), w.get(), n, c, f); });
  gemm("mlp  x(N,F)·W(C,F)ᵀ += fp32", 2 * nc * f, {k.layers}, [&] {
    return matmul_forward<float>(ctx, acc.get(), x.get(), w.get(), n, f, c, Output::kAdd);
  });
  gemm("fc backward (dx bf16 + dW fp32)", 4 * nc * f, {0, "the model's fc dx is fp32 (below)"},
       [&] {
         return matmul_backward<bf16>(ctx, y.get(), dw.get(), x.get(), x.get(), w.get(), n, c, f,
                                      Output::kOverwrite);
       });
  // MlpBackward (mlp, then fc), AttentionBackward (proj, then qkv).
  gemm("mlp backward (dx (N,F) bf16 + dW fp32)", 4 * nc * f, {k.layers}, [&] {
    return matmul_backward<bf16>(ctx, y.get(), dw.get(), x.get(), u.get(), w.get(), n, f, c,
                                 Output::kOverwrite);
  });
  gemm("fc backward (dx fp32 + dW fp32)", 4 * nc * f, {k.layers}, [&] {
    return matmul_backward<float>(ctx, acc.get(), dw.get(), x.get(), u.get(), w.get(), n, c, f,
                                  Output::kOverwrite);
  });
  gemm("proj backward (dx bf16 + dW fp32)", 4 * nc * c, {k.attention}, [&] {
    return matmul_backward<bf16>(ctx, y.get(), dw.get(), x.get(), u.get(), w.get(), n, c, c,
                                 Output::kOverwrite);
  });
  gemm("qkv backward (dx fp32 + dW fp32)", 12 * nc * c, {k.attention}, [&] {
    return matmul_backward<float>(ctx, acc.get(), dw.get(), x.get(), u.get(), w.get(), n, c, 3 * c,
                                  Output::kOverwrite);
  });
}

void BenchNorms(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k) {
  int64_t n = s.b * s.t, c = s.m.model_dim, nh = s.m.n_head, hd = s.m.head_dim;
  double nc = double(n) * double(c), rows = double(n), heads = double(n) * double(nh);
  DeviceBuffer<float> x = Filled<float>(ctx, n * c, 21, "x"),
                      dout = Filled<float>(ctx, n * c, 23, "dout"),
                      dinp = Filled<float>(ctx, n * c, 24, "dinp"), y32 = Buffer<float>(n * c, "y"),
                      rstd = Buffer<float>(n * nh, "rstd");
  DeviceBuffer<bf16> xb = Filled<bf16>(ctx, n * c, 22, "x bf16"), y = Buffer<bf16>(n * c, "y");
  // ln1 (AttentionForward), ln2 (MlpForward), the final norm (HeadForward).
  MemRow(ctx, table, "rmsnorm fwd (N,C) fp32 → bf16", nc * 6,
         k.Fp32Stream(k.attention + k.layers + 1),
         [&] { return rmsnorm_forward<float, bf16>(ctx, y.get(), rstd.get(), x.get(), n, c); });
  MemRow(ctx, table, "rmsnorm fwd (N,C) bf16 → bf16 (bf16 stream)", nc * 4 + rows * 4,
         k.Bf16Stream(k.attention + k.layers + 1),
         [&] { return rmsnorm_forward<bf16, bf16>(ctx, y.get(), rstd.get(), xb.get(), n, c); });
  // EmbedForward: x0 in the stream's storage.
  MemRow(ctx, table, "rmsnorm fwd (N,C) fp32 → fp32 (embedding)", nc * 8 + rows * 4,
         k.Fp32Stream(k.embed_norm),
         [&] { return rmsnorm_forward<float, float>(ctx, y32.get(), rstd.get(), x.get(), n, c); });
  MemRow(ctx, table, "rmsnorm fwd (N,C) fp32 → bf16 (embedding, bf16 stream)", nc * 6 + rows * 4,
         k.Bf16Stream(k.embed_norm),
         [&] { return rmsnorm_forward<float, bf16>(ctx, y.get(), rstd.get(), x.get(), n, c); });
  // qk-norm of q and of k (AttentionForward), now inside the fused qkv pass.
  MemRow(ctx, table, "rmsnorm fwd (N·NH,HD) bf16 (qk-norm)", nc * 4 + heads * 4,
         {2 * k.qk_norm * k.attention, kFused}, [&] {
           return rmsnorm_forward<bf16, bf16>(ctx, y.get(), rstd.get(), xb.get(), n * nh, hd);
         });
  // ln2 (MlpBackward) and ln1 (AttentionBackward), added into dx; those whose dx is next read
  // as bf16 write its bf16 copy too (trainer/cuda/dx_copy_plan.h).
  MemRow(ctx, table, "rmsnorm bwd (N,C) fp32 +=", nc * 16 + rows * 4,
         k.Fp32Stream(k.layers + k.attention - k.dx_copy_norms), [&] {
           return rmsnorm_backward<float>(ctx, dinp.get(), dout.get(), x.get(), rstd.get(), n, c,
                                          Output::kAdd);
         });
  MemRow(ctx, table, "rmsnorm bwd (N,C) fp32 +=, and dx's bf16 copy", nc * 18 + rows * 4,
         k.Fp32Stream(k.dx_copy_norms), [&] {
           return rmsnorm_backward<float>(ctx, dinp.get(), dout.get(), x.get(), rstd.get(), n, c,
                                          Output::kAdd, y.get());
         });
  MemRow(ctx, table, "rmsnorm bwd (N,C) bf16 x, fp32 +=", nc * 14 + rows * 4,
         k.Bf16Stream(k.layers + k.attention - k.dx_copy_norms), [&] {
           return rmsnorm_backward<bf16>(ctx, dinp.get(), dout.get(), xb.get(), rstd.get(), n, c,
                                         Output::kAdd);
         });
  MemRow(ctx, table, "rmsnorm bwd (N,C) bf16 x, fp32 +=, and dx's bf16 copy", nc * 16 + rows * 4,
         k.Bf16Stream(k.dx_copy_norms), [&] {
           return rmsnorm_backward<bf16>(ctx, dinp.get(), dout.get(), xb.get(), rstd.get(), n, c,
                                         Output::kAdd, y.get());
         });
  // The final norm (Backward; with dx's bf16 copy when the last MLP reads it next) and the
  // embedding norm (EmbedBackward).
  // The embedding norm's input is the fp32 embedding rows with either stream.
  MemRow(ctx, table, "rmsnorm bwd (N,C) fp32 =", nc * 12 + rows * 4,
         {(1 - k.dx_copy_final) * (1 - k.bf16_stream) + k.embed_norm}, [&] {
           return rmsnorm_backward<float>(ctx, dinp.get(), dout.get(), x.get(), rstd.get(), n, c,
                                          Output::kOverwrite);
         });
  MemRow(ctx, table, "rmsnorm bwd (N,C) fp32 =, and dx's bf16 copy", nc * 14 + rows * 4,
         k.Fp32Stream(k.dx_copy_final), [&] {
           return rmsnorm_backward<float>(ctx, dinp.get(), dout.get(), x.get(), rstd.get(), n, c,
                                          Output::kOverwrite, y.get());
         });
  MemRow(ctx, table, "rmsnorm bwd (N,C) bf16 x, fp32 = (final norm)", nc * 10 + rows * 4,
         k.Bf16Stream(1 - k.dx_copy_final), [&] {
           return rmsnorm_backward<bf16>(ctx, dinp.get(), dout.get(), xb.get(), rstd.get(), n, c,
                                         Output::kOverwrite);
         });
  MemRow(ctx, table, "rmsnorm bwd (N,C) bf16 x, fp32 =, and dx's bf16 copy", nc * 12 + rows * 4,
         k.Bf16Stream(k.dx_copy_final), [&] {
           return rmsnorm_backward<bf16>(ctx, dinp.get(), dout.get(), xb.get(), rstd.get(), n, c,
                                         Output::kOverwrite, y.get());
         });
  // qk-norm of dq and of dk (AttentionBackward), now inside the fused qkv pass.
  MemRow(ctx, table, "rmsnorm bwd (N·NH,HD) bf16 x, fp32 = (qk-norm)", nc * 10 + heads * 4,
         {2 * k.qk_norm * k.attention, kFused}, [&] {
           return rmsnorm_backward<bf16>(ctx, dinp.get(), dout.get(), xb.get(), rstd.get(), n * nh,
                                         hd, Output::kOverwrite);
         });
}

void BenchMlpAct(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k) {
  int64_t nf = s.b * s.t * s.m.hidden_dim();
  DeviceBuffer<bf16> u = Filled<bf16>(ctx, nf, 25, "u"), a = Buffer<bf16>(nf, "a"),
                     d = Filled<bf16>(ctx, nf, 26, "d");
  MemRow(ctx, table, "relu² fwd (N,F) bf16", double(nf) * 4, {2 * k.layers},
         [&] { return mlp_act_forward(ctx, a.get(), u.get(), nf, s.m.mlp_act); });
  MemRow(ctx, table, "relu² bwd (N,F) bf16, in place", double(nf) * 6, {k.layers},
         [&] { return mlp_act_backward(ctx, d.get(), d.get(), u.get(), nf, s.m.mlp_act); });
}

void BenchStreamOps(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k) {
  int64_t nc = s.b * s.t * s.m.model_dim;
  DeviceBuffer<float> x = Filled<float>(ctx, nc, 31, "x"), y = Filled<float>(ctx, nc, 32, "y"),
                      dout = Filled<float>(ctx, nc, 33, "dout"),
                      dx = Filled<float>(ctx, nc, 34, "dx"), dy = Filled<float>(ctx, nc, 35, "dy");
  DeviceBuffer<bf16> xb = Buffer<bf16>(nc, "x bf16"), sb = Filled<bf16>(ctx, nc, 36, "x bf16"),
                     tb = Filled<bf16>(ctx, nc, 37, "y bf16"), ob = Buffer<bf16>(nc, "out bf16");
  Scalars lam = MakeScalars(ctx);
  const float* p = lam.p.get();
  float* g = lam.g.get();
  double b = double(nc);
  // BlockForward: the U-Net skip in, the x0 shortcut.
  MemRow(ctx, table, "mix fp32 (N,C) a·x + b·y", b * 12, k.Fp32Stream(k.skip_in + k.shortcut), [&] {
    return residual_mix_forward<float, float, float>(ctx, dx.get(), x.get(), MixWeight::Param(p),
                                                     y.get(), MixWeight::Param(p + 1), nc);
  });
  MemRow(ctx, table, "mix bf16 (N,C) a·x + b·y, rounded", b * 6,
         k.Bf16Stream(k.skip_in + k.shortcut), [&] {
           return residual_mix_forward<bf16, bf16, bf16>(
               ctx, ob.get(), sb.get(), MixWeight::Param(p), tb.get(), MixWeight::Param(p + 1), nc,
               Rounding::kBf16);
         });
  // AddBranch with a bf16 stream: the block output's GEMM writes bf16, added with one rounding
  // (an fp32 stream adds in the GEMM instead).
  MemRow(ctx, table, "add bf16 (N,C) stream + bf16 branch, rounded", b * 6,
         k.Bf16Stream(k.attention + k.layers), [&] {
           return residual_mix_forward<bf16, bf16, bf16>(
               ctx, ob.get(), sb.get(), MixWeight::Constant(1.f), tb.get(),
               MixWeight::Constant(1.f), nc, Rounding::kBf16);
         });
  MemRow(ctx, table, "add fp32 (N,C) stream + bf16 branch, rounded (before item 14)", b * 10,
         {k.bf16_stream * (k.attention + k.layers), "bf16 stream: its bf16 row is summed"}, [&] {
           return residual_mix_forward<float, float, bf16>(
               ctx, dx.get(), x.get(), MixWeight::Constant(1.f), tb.get(), MixWeight::Constant(1.f),
               nc, Rounding::kBf16);
         });
  // gpt_backward.cc: dx into dx0 (Backward, with the shortcut), d(v1) into layer 0's (value
  // residual); each dskip into dx, with dx's bf16 copy (BlockBackward).
  MemRow(ctx, table, "add fp32 (N,C) +=", b * 12, {(k.shortcut > 0) + k.value_residual},
         [&] { return add_into(ctx, dx.get(), x.get(), nc); });
  MemRow(ctx, table, "add fp32 (N,C) +=, and the bf16 copy", b * 14, {k.skip_out},
         [&] { return add_into(ctx, dx.get(), x.get(), nc, xb.get()); });
  // The copy of the stream the proj and mlp products made before adding into it, until their
  // GEMMs read it as C and wrote D (NOTES item 8).
  MemRow(ctx, table, "copy fp32 (N,C) device to device", b * 8,
         {k.attention + k.layers, "replaced by the GEMM's C != D (item 8)"},
         [&] { return CopyOnDevice(ctx, dx.get(), x.get(), nc); });
  // Backward zeroed dx0, d(v1) and each dskip; now their first writers overwrite them.
  MemRow(ctx, table, "memset fp32 (N,C)", b * 4,
         {(k.shortcut > 0) + k.value_residual + k.skip_out, "replaced by the first writer's ="},
         [&]() -> Status {
           ABLATE_CUDA_CHECK(cudaMemsetAsync(dx.get(), 0, size_t(nc) * 4, ctx.stream()));
           return {};
         });
  // dx before the mlp and proj backward products (MlpBackward, AttentionBackward), now written
  // by dx's writers as they store dx.
  MemRow(ctx, table, "to_bf16 (N,C)", b * 6,
         {k.layers + k.attention, "written by dx's writers (the bf16 copy rows)"},
         [&] { return to_bf16(ctx, xb.get(), x.get(), nc); });
  // ShortcutBackward: dx = λ0·dout, dx0 += λ1·dout, both λ gradients; with dx's bf16 copy when
  // the next layer's MLP reads it next.
  MemRow(
      ctx, table, "shortcut bwd fp32 (N,C): dx =, dx0 +=, dλ", b * 24,
      k.Fp32Stream(k.shortcut - k.dx_copy_shortcuts), [&] {
        MixGrads mg{dx.get(), Output::kOverwrite, dy.get(), Output::kAdd, {g, 1.f}, {g + 1, 1.f}};
        return residual_mix_backward<float, float>(ctx, mg, dout.get(), x.get(),
                                                   MixWeight::Param(p), y.get(),
                                                   MixWeight::Param(p + 1), nc);
      });
  MemRow(ctx, table, "shortcut bwd fp32 (N,C), and dx's bf16 copy", b * 26,
         k.Fp32Stream(k.dx_copy_shortcuts), [&] {
           MixGrads mg{dx.get(), Output::kOverwrite, dy.get(), Output::kAdd,
                       {g, 1.f}, {g + 1, 1.f},       xb.get()};
           return residual_mix_backward<float, float>(ctx, mg, dout.get(), x.get(),
                                                      MixWeight::Param(p), y.get(),
                                                      MixWeight::Param(p + 1), nc);
         });
  MemRow(
      ctx, table, "shortcut bwd bf16 x, x0 (N,C): dx =, dx0 +=, dλ", b * 20,
      k.Bf16Stream(k.shortcut - k.dx_copy_shortcuts), [&] {
        MixGrads mg{dx.get(), Output::kOverwrite, dy.get(), Output::kAdd, {g, 1.f}, {g + 1, 1.f}};
        return residual_mix_backward<bf16, bf16>(ctx, mg, dout.get(), sb.get(), MixWeight::Param(p),
                                                 tb.get(), MixWeight::Param(p + 1), nc);
      });
  MemRow(ctx, table, "shortcut bwd bf16 x, x0 (N,C), and dx's bf16 copy", b * 22,
         k.Bf16Stream(k.dx_copy_shortcuts), [&] {
           MixGrads mg{dx.get(), Output::kOverwrite, dy.get(), Output::kAdd,
                       {g, 1.f}, {g + 1, 1.f},       xb.get()};
           return residual_mix_backward<bf16, bf16>(ctx, mg, dout.get(), sb.get(),
                                                    MixWeight::Param(p), tb.get(),
                                                    MixWeight::Param(p + 1), nc);
         });
  // SkipBackward: dskip += w·dout and dw; the kernel reads x although da is not asked for.
  MemRow(ctx, table, "skip bwd fp32 (N,C): dskip +=, dw", b * 20, k.Fp32Stream(k.skip_in), [&] {
    MixGrads mg{nullptr, Output::kAdd, dy.get(), Output::kAdd, {}, {g + 2, 1.f}};
    return residual_mix_backward<float, float>(ctx, mg, dout.get(), x.get(),
                                               MixWeight::Constant(1.f), y.get(),
                                               MixWeight::Param(p + 2), nc);
  });
  MemRow(ctx, table, "skip bwd bf16 x, skip (N,C): dskip +=, dw", b * 16, k.Bf16Stream(k.skip_in),
         [&] {
           MixGrads mg{nullptr, Output::kAdd, dy.get(), Output::kAdd, {}, {g + 2, 1.f}};
           return residual_mix_backward<bf16, bf16>(ctx, mg, dout.get(), sb.get(),
                                                    MixWeight::Constant(1.f), tb.get(),
                                                    MixWeight::Param(p + 2), nc);
         });
}

void BenchQkvOps(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k) {
  QkvOperands x = MakeQkvOperands(ctx, s);
  QkvForwardRows(ctx, table, s, k, x);
  QkvBackwardRows(ctx, table, s, k, x);
}

}  // namespace ablate::cuda::gpu_bench
