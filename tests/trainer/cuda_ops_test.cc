// Every memory-bound CUDA op, the cuBLASLt GEMMs and the fused classifier against their CPU
// twins (trainer/cpu) on fresh random inputs. The CPU twin gets exactly the operands the GPU
// reads (bf16-rounded where the GPU stores bf16); outputs are poisoned before each op.
// Thresholds: fp32 results 1e-5 relative (1e-4 for sums of many products); results stored in
// bf16, or computed from bf16-rounded intermediates, 1e-2 to 2e-2 (bf16 keeps 8 bits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/trainer/cuda_test_util.h"
#include "tests/trainer/embedding_reference.h"
#include "trainer/cpu/embedding.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/mlp_act.h"
#include "trainer/cpu/residual.h"
#include "trainer/cpu/rmsnorm.h"
#include "trainer/cpu/rope.h"
#include "trainer/cpu/softcap_cross_entropy.h"
#include "trainer/cuda/convert.h"
#include "trainer/cuda/embedding.h"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/mlp_act.h"
#include "trainer/cuda/qkv.h"
#include "trainer/cuda/residual.h"
#include "trainer/cuda/rmsnorm.h"
#include "trainer/cuda/rope.h"
#include "trainer/cuda/softcap_cross_entropy.h"

namespace ablate {
namespace {

using cuda::bf16;
using testing::DeviceTensor;
using testing::Random;
using testing::RandomIds;
using testing::RelError;
using testing::RoundBf16;

class CudaOps : public testing::CudaTest {};

// The embedding backward of `idx` on the device: the same bits as the host in the plan's order
// (testing::EmbeddingBackwardInPlanOrder), the same bits again on a second run, and within
// float rounding of the CPU twin's scatter-add.
void CheckEmbeddingBackward(cuda::CudaContext& ctx, const std::vector<int32_t>& idx, int64_t ve,
                            int64_t c) {
  int64_t n = int64_t(idx.size());
  SCOPED_TRACE("N " + std::to_string(n) + ", C " + std::to_string(c));
  std::vector<float> dout = Random(n * c), dtable = Random(ve * c);
  cuda::EmbeddingPlan plan = cuda::BuildEmbeddingPlan(idx.data(), n);
  std::vector<int32_t> packed(static_cast<size_t>(cuda::PackedEmbeddingPlanInts(n)));
  packed.resize(size_t(cuda::PackEmbeddingPlan(plan, packed.data())));
  DeviceTensor<int32_t> d_plan(ctx, packed);
  cuda::DeviceEmbeddingPlan dplan = cuda::DeviceEmbeddingPlanAt(d_plan.get(), plan);
  int64_t partial_rows = cuda::EmbeddingPartialRows(n);
  DeviceTensor<float> d_dout(ctx, dout), partials(ctx, partial_rows * c);
  std::vector<float> got[2];
  for (std::vector<float>& g : got) {
    DeviceTensor<float> d_dtable(ctx, dtable);
    partials.Poison();
    ABLATE_EXPECT_OP(ctx, cuda::embedding_backward(ctx, d_dtable.get(), d_dout.get(), dplan, c,
                                                   partials.get(), partial_rows));
    g = d_dtable.Get();
  }
  EXPECT_EQ(got[0], got[1]) << "a second run gave other bits";
  std::vector<float> ordered = dtable, twin = dtable;
  testing::EmbeddingBackwardInPlanOrder(ordered, dout, plan, c);
  EXPECT_EQ(got[0], ordered) << "not the plan's order of sums";
  cpu::embedding_backward(twin.data(), dout.data(), idx.data(), n, c);
  EXPECT_LT(RelError(got[0], twin), 1e-5);
}

TEST_F(CudaOps, EmbeddingForwardGathersAndBackwardSumsPerId) {
  int64_t ve = 50, c = 96, n = 300;
  std::vector<float> table = Random(ve * c);
  std::vector<int32_t> idx = RandomIds(n, int32_t(ve));
  DeviceTensor<float> d_table(ctx(), table), d_out(ctx(), n * c);
  DeviceTensor<int32_t> d_idx(ctx(), idx);
  d_out.Poison();
  ABLATE_EXPECT_OP(ctx(),
                   cuda::embedding_forward(ctx(), d_out.get(), d_table.get(), d_idx.get(), n, c));
  std::vector<float> want(n * c);
  cpu::embedding_forward(want.data(), table.data(), idx.data(), n, c);
  EXPECT_EQ(d_out.Get(), want);

  CheckEmbeddingBackward(ctx(), idx, ve, c);
}

// Ids as text has them: the most frequent ones take hundreds of rows, so their rows are cut into
// segments and merged by the second pass; ids of exactly one and just over one segment; C over
// one block of channels with a partial last one.
TEST_F(CudaOps, EmbeddingBackwardSplitsFrequentIdsAndKeepsItsBits) {
  CheckEmbeddingBackward(ctx(), testing::ZipfLikeIds(20000, 5000, 61), 5000, 96);
  CheckEmbeddingBackward(ctx(), testing::ZipfLikeIds(3000, 700, 62), 700, 300);
  std::vector<int32_t> edges;
  const int32_t r = cuda::kEmbeddingSegmentRows;
  for (auto [id, rows] :
       {std::pair{3, r}, std::pair{1, r + 1}, std::pair{4, 2 * r + 1}, std::pair{0, 1}}) {
    edges.insert(edges.end(), size_t(rows), id);  // one segment, two, three, a single row
  }
  std::mt19937 rng(63);
  std::shuffle(edges.begin(), edges.end(), rng);
  CheckEmbeddingBackward(ctx(), edges, 5, 257);
}

// One forward of each storage combination against the CPU on the same (rounded) input.
template <class TIn, class TOut>
void CheckRmsNormForward(cuda::CudaContext& ctx, int64_t n, int64_t c, double tol) {
  std::vector<float> x = Random(n * c, -2.f, 2.f);
  if (std::is_same_v<TIn, bf16>) x = RoundBf16(x);
  DeviceTensor<TIn> d_x(ctx, x);
  DeviceTensor<TOut> d_out(ctx, n * c);
  DeviceTensor<float> d_rstd(ctx, n);
  d_out.Poison();
  d_rstd.Poison();
  ABLATE_EXPECT_OP(
      ctx, cuda::rmsnorm_forward<TIn, TOut>(ctx, d_out.get(), d_rstd.get(), d_x.get(), n, c));
  std::vector<float> want(n * c), want_rstd(n);
  cpu::rmsnorm_forward(want.data(), want_rstd.data(), x.data(), n, c);
  EXPECT_LT(RelError(d_out.Get(), want), tol);
  EXPECT_LT(RelError(d_rstd.Get(), want_rstd), 1e-5);
}

TEST_F(CudaOps, RmsNormForwardMatchesCpu) {
  CheckRmsNormForward<float, float>(ctx(), 77, 200, 1e-5);
  CheckRmsNormForward<float, bf16>(ctx(), 77, 200, 1e-2);
  CheckRmsNormForward<bf16, bf16>(ctx(), 77 * 3, 40, 1e-2);  // per-head rows, as qk-norm
}

template <class TIn>
void CheckRmsNormBackward(cuda::CudaContext& ctx, int64_t n, int64_t c, cpu::Output mode) {
  std::vector<float> x = Random(n * c, -2.f, 2.f), dout = Random(n * c), dinp = Random(n * c);
  if (std::is_same_v<TIn, bf16>) x = RoundBf16(x);
  std::vector<float> y(n * c), rstd(n);
  cpu::rmsnorm_forward(y.data(), rstd.data(), x.data(), n, c);
  DeviceTensor<TIn> d_x(ctx, x);
  DeviceTensor<float> d_dout(ctx, dout), d_rstd(ctx, rstd), d_dinp(ctx, dinp);
  if (mode == cpu::Output::kOverwrite) d_dinp.Poison();
  ABLATE_EXPECT_OP(ctx, cuda::rmsnorm_backward<TIn>(ctx, d_dinp.get(), d_dout.get(), d_x.get(),
                                                    d_rstd.get(), n, c, mode));
  cpu::rmsnorm_backward(dinp.data(), dout.data(), x.data(), rstd.data(), n, c, mode);
  EXPECT_LT(RelError(d_dinp.Get(), dinp), 1e-5);
}

TEST_F(CudaOps, RmsNormBackwardMatchesCpu) {
  CheckRmsNormBackward<float>(ctx(), 77, 200, cpu::Output::kAdd);
  CheckRmsNormBackward<float>(ctx(), 77, 200, cpu::Output::kOverwrite);
  CheckRmsNormBackward<bf16>(ctx(), 231, 40, cpu::Output::kOverwrite);
}

TEST_F(CudaOps, RopeMatchesCpuForBothKinds) {
  int64_t b = 2, t = 37, nh = 3, hd = 32, n = b * t * nh * hd;
  for (cpu::RopeKind kind : {cpu::RopeKind::kFull, cpu::RopeKind::kHalfTruncated}) {
    Result<cuda::RopeTable> table = cuda::rope_table(ctx(), t, hd, kind, 10000.0);
    ASSERT_TRUE(table.ok()) << table.error().message;
    cpu::RopeTable<float> cpu_table = cpu::rope_table<float>(t, hd, kind, 10000.0);
    std::vector<float> x = RoundBf16(Random(n));
    DeviceTensor<bf16> d_x(ctx(), x), d_y(ctx(), n);
    d_y.Poison();
    ABLATE_EXPECT_OP(ctx(),
                     cuda::rope_forward<bf16>(ctx(), d_y.get(), d_x.get(), *table, b, t, nh, hd));
    std::vector<float> want(n);
    cpu::rope_forward(want.data(), x.data(), cpu_table, b, t, nh, hd);
    EXPECT_LT(RelError(d_y.Get(), want), 1e-2);

    std::vector<float> dy = Random(n);
    DeviceTensor<float> d_dy(ctx(), dy);  // in place, as the model runs it
    ABLATE_EXPECT_OP(
        ctx(), cuda::rope_backward<float>(ctx(), d_dy.get(), d_dy.get(), *table, b, t, nh, hd));
    cpu::rope_backward(dy.data(), dy.data(), cpu_table, b, t, nh, hd);
    EXPECT_LT(RelError(d_dy.Get(), dy), 1e-5);
  }
}

TEST_F(CudaOps, ResidualMixForwardMatchesCpu) {
  int64_t n = 5000;
  std::vector<float> w = {0.7f, -0.4f};
  DeviceTensor<float> d_w(ctx(), w);
  std::vector<float> x = Random(n), y = Random(n);
  {  // fp32 stream: λ0·x + λ1·y
    DeviceTensor<float> d_x(ctx(), x), d_y(ctx(), y), d_out(ctx(), n);
    d_out.Poison();
    ABLATE_EXPECT_OP(ctx(), cuda::residual_mix_forward<float, float, float>(
                                ctx(), d_out.get(), d_x.get(), cuda::MixWeight::Param(d_w.get()),
                                d_y.get(), cuda::MixWeight::Param(d_w.get() + 1), n));
    std::vector<float> want(n);
    cpu::residual_mix_forward(want.data(), x.data(), w[0], y.data(), w[1], n);
    EXPECT_LT(RelError(d_out.Get(), want), 1e-6);
  }
  std::vector<float> xb = RoundBf16(x), yb = RoundBf16(y);
  {  // bf16 stream (activation_dtype bf16), fp32 buffers: bit for bit the CPU's rounding
    DeviceTensor<float> d_x(ctx(), xb), d_y(ctx(), yb), d_out(ctx(), n);
    DeviceTensor<bf16> d_yb(ctx(), yb);
    cuda::MixWeight a = cuda::MixWeight::Param(d_w.get()).RoundedIf(cpu::Rounding::kBf16);
    cuda::MixWeight b = cuda::MixWeight::Param(d_w.get() + 1).RoundedIf(cpu::Rounding::kBf16);
    std::vector<float> want(n);
    cpu::residual_mix_forward(want.data(), xb.data(), w[0], yb.data(), w[1], n,
                              cpu::Rounding::kBf16);
    d_out.Poison();
    ABLATE_EXPECT_OP(ctx(),
                     cuda::residual_mix_forward<float, float, float>(
                         ctx(), d_out.get(), d_x.get(), a, d_y.get(), b, n, cpu::Rounding::kBf16));
    EXPECT_EQ(d_out.Get(), want) << "shortcut mix";
    d_out.Poison();  // a block's output, written by its GEMM in bf16, added to the stream
    ABLATE_EXPECT_OP(ctx(),
                     cuda::residual_mix_forward<float, float, bf16>(
                         ctx(), d_out.get(), d_x.get(), a, d_yb.get(), b, n, cpu::Rounding::kBf16));
    EXPECT_EQ(d_out.Get(), want) << "bf16 branch";
    // bf16 buffers (the stream as the model stores it): the same values.
    DeviceTensor<bf16> d_xb(ctx(), xb), d_outb(ctx(), n);
    d_outb.Poison();
    ABLATE_EXPECT_OP(
        ctx(), cuda::residual_mix_forward<bf16, bf16, bf16>(
                   ctx(), d_outb.get(), d_xb.get(), a, d_yb.get(), b, n, cpu::Rounding::kBf16));
    EXPECT_EQ(d_outb.Get(), want) << "bf16 buffers";
  }
  {  // value residual: (1 − λ)·v + λ·v1, bf16
    DeviceTensor<bf16> d_x(ctx(), xb), d_y(ctx(), yb), d_out(ctx(), n);
    d_out.Poison();
    ABLATE_EXPECT_OP(ctx(), cuda::residual_mix_forward<bf16, bf16, bf16>(
                                ctx(), d_out.get(), d_x.get(), cuda::MixWeight::OneMinus(d_w.get()),
                                d_y.get(), cuda::MixWeight::Param(d_w.get()), n));
    std::vector<float> want(n);
    cpu::residual_mix_forward(want.data(), xb.data(), 1.f - w[0], yb.data(), w[0], n);
    EXPECT_LT(RelError(d_out.Get(), want), 1e-2);
  }
  {  // value embeddings: λ0·v + λ1·ve, and λ0·v alone
    DeviceTensor<bf16> d_x(ctx(), xb), d_out(ctx(), n);
    DeviceTensor<float> d_y(ctx(), y);
    for (bool with_y : {true, false}) {
      d_out.Poison();
      ABLATE_EXPECT_OP(ctx(),
                       cuda::residual_mix_forward<bf16, bf16, float>(
                           ctx(), d_out.get(), d_x.get(), cuda::MixWeight::Param(d_w.get()),
                           with_y ? d_y.get() : nullptr, cuda::MixWeight::Param(d_w.get() + 1), n));
      std::vector<float> want(n);
      cpu::residual_mix_forward(want.data(), xb.data(), w[0], with_y ? y.data() : nullptr, w[1], n);
      EXPECT_LT(RelError(d_out.Get(), want), 1e-2) << "with_y " << with_y;
    }
  }
}

TEST_F(CudaOps, ResidualMixBackwardMatchesCpu) {
  int64_t n = 100003;  // not a multiple of the fixed grid
  std::vector<float> w = {0.7f, -0.4f}, gw = {0.11f, -0.23f};
  std::vector<float> x = Random(n), y = Random(n), dout = Random(n);
  std::vector<float> dx0 = Random(n), dy0 = Random(n);
  {  // shortcut: dx overwritten, dy accumulated, both weight gradients
    DeviceTensor<float> d_w(ctx(), w), d_gw(ctx(), gw), d_x(ctx(), x), d_y(ctx(), y),
        d_dout(ctx(), dout), d_dx(ctx(), n), d_dy(ctx(), dy0);
    d_dx.Poison();
    cuda::MixGrads g{d_dx.get(),        cpu::Output::kOverwrite, d_dy.get(),
                     cpu::Output::kAdd, {d_gw.get(), 1.f},       {d_gw.get() + 1, 1.f}};
    ABLATE_EXPECT_OP(
        ctx(), cuda::residual_mix_backward<float, float>(
                   ctx(), g, d_dout.get(), d_x.get(), cuda::MixWeight::Param(d_w.get()), d_y.get(),
                   cuda::MixWeight::Param(d_w.get() + 1), n));
    std::vector<float> dx(n, 0.f), dy = dy0, want_gw = gw;
    cpu::MixGrads<float> cg{dx.data(), dy.data(), &want_gw[0], &want_gw[1]};
    cpu::residual_mix_backward(cg, dout.data(), x.data(), w[0], y.data(), w[1], n);
    EXPECT_LT(RelError(d_dx.Get(), dx), 1e-6);
    EXPECT_LT(RelError(d_dy.Get(), dy), 1e-6);
    EXPECT_LT(RelError(d_gw.Get(), want_gw), 1e-4);
  }
  std::vector<float> xb = RoundBf16(x), yb = RoundBf16(y);
  {  // value residual: one λ gets Σ dout·v1 − Σ dout·v
    DeviceTensor<float> d_w(ctx(), w), d_gw(ctx(), gw), d_dout(ctx(), dout), d_dx(ctx(), n),
        d_dy(ctx(), dy0);
    DeviceTensor<bf16> d_x(ctx(), xb), d_y(ctx(), yb);
    d_dx.Poison();
    cuda::MixGrads g{d_dx.get(),        cpu::Output::kOverwrite, d_dy.get(),
                     cpu::Output::kAdd, {d_gw.get(), -1.f},      {d_gw.get(), 1.f}};
    ABLATE_EXPECT_OP(ctx(),
                     cuda::residual_mix_backward<bf16, bf16>(
                         ctx(), g, d_dout.get(), d_x.get(), cuda::MixWeight::OneMinus(d_w.get()),
                         d_y.get(), cuda::MixWeight::Param(d_w.get()), n));
    std::vector<float> dx(n, 0.f), dy = dy0;
    float da = 0, db = 0;
    cpu::MixGrads<float> cg{dx.data(), dy.data(), &da, &db};
    cpu::residual_mix_backward(cg, dout.data(), xb.data(), 1.f - w[0], yb.data(), w[0], n);
    std::vector<float> want_gw = {gw[0] + db - da, gw[1]};
    EXPECT_LT(RelError(d_dx.Get(), dx), 1e-6);
    EXPECT_LT(RelError(d_dy.Get(), dy), 1e-6);
    EXPECT_LT(RelError(d_gw.Get(), want_gw), 1e-4);
  }
  {  // a layer without a value embedding: v = λ0·v, only dx and dλ0
    DeviceTensor<float> d_w(ctx(), w), d_gw(ctx(), gw), d_dout(ctx(), dout), d_dx(ctx(), n);
    DeviceTensor<bf16> d_x(ctx(), xb);
    d_dx.Poison();
    cuda::MixGrads g{d_dx.get(),        cpu::Output::kOverwrite,
                     nullptr,           cpu::Output::kOverwrite,
                     {d_gw.get(), 1.f}, {}};
    ABLATE_EXPECT_OP(
        ctx(), cuda::residual_mix_backward<bf16, float>(ctx(), g, d_dout.get(), d_x.get(),
                                                        cuda::MixWeight::Param(d_w.get()), nullptr,
                                                        cuda::MixWeight::Param(d_w.get() + 1), n));
    std::vector<float> dx(n, 0.f), want_gw = gw;
    cpu::MixGrads<float> cg{dx.data(), nullptr, &want_gw[0], nullptr};
    cpu::residual_mix_backward(cg, dout.data(), xb.data(), w[0], static_cast<const float*>(nullptr),
                               w[1], n);
    EXPECT_LT(RelError(d_dx.Get(), dx), 1e-6);
    EXPECT_LT(RelError(d_gw.Get(), want_gw), 1e-4);
  }
}

// At the size of a stream (many elements per thread of the fixed grid): the weights' gradients
// against sums in double, and the same bits on a second run (the fixed grid's promise).
TEST_F(CudaOps, ResidualMixBackwardSumsAStreamDeterministically) {
  int64_t n = 3000017;  // over eleven passes of the fixed grid, not a multiple of it
  std::vector<float> w = {0.7f, -0.4f};
  std::vector<float> x = Random(n), y = Random(n), dout = Random(n);
  DeviceTensor<float> d_w(ctx(), w), d_x(ctx(), x), d_y(ctx(), y), d_dout(ctx(), dout),
      d_dx(ctx(), n), d_gw(ctx(), std::vector<float>{0.f, 0.f});
  cuda::MixGrads g{d_dx.get(),        cpu::Output::kOverwrite, nullptr,
                   cpu::Output::kAdd, {d_gw.get(), 1.f},       {d_gw.get() + 1, 1.f}};
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    d_gw.Set(std::vector<float>{0.f, 0.f});
    ABLATE_EXPECT_OP(
        ctx(), cuda::residual_mix_backward<float, float>(
                   ctx(), g, d_dout.get(), d_x.get(), cuda::MixWeight::Param(d_w.get()), d_y.get(),
                   cuda::MixWeight::Param(d_w.get() + 1), n));
    runs.push_back(d_gw.Get());
  }
  double sx = 0, sy = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    sx += double(dout[i]) * x[i];
    sy += double(dout[i]) * y[i];
    scale += std::fabs(double(dout[i]) * x[i]);
  }
  // fp32 partials of ~11 terms, then trees: far inside 1e-6 of the sum of magnitudes.
  EXPECT_NEAR(runs[0][0], sx, 1e-6 * scale);
  EXPECT_NEAR(runs[0][1], sy, 1e-6 * scale);
  EXPECT_EQ(runs[0], runs[1]);
  std::vector<float> dx = d_dx.Get();
  for (int64_t i = 0; i < n; i += 9973) ASSERT_EQ(dx[i], w[0] * dout[i]) << i;
}

// The stream gradient's writers (stream_kernels.cuh) with the bf16 copy of dx they write for the
// next bf16 GEMM (gpt_backward.cc, NOTES.md item 12): dx the same bits as without the copy, and
// the copy the bits to_bf16 gives. The copy's buffer starts poisoned.
TEST_F(CudaOps, StreamGradientWritersWriteTheBf16CopyToBf16Would) {
  int64_t n = 300, c = 768, nc = n * c;
  std::vector<float> x = Random(nc, -2.f, 2.f), dout = Random(nc), start = Random(nc);
  std::vector<float> ignored(static_cast<size_t>(nc)), rstd(static_cast<size_t>(n));
  cpu::rmsnorm_forward<float>(ignored.data(), rstd.data(), x.data(), n, c);
  DeviceTensor<float> d_x(ctx(), x), d_dout(ctx(), dout), d_rstd(ctx(), rstd),
      d_w(ctx(), std::vector<float>{0.7f, -0.4f}), d_gw(ctx(), std::vector<float>{0.f, 0.f});
  DeviceTensor<bf16> d_copy(ctx(), nc), d_want(ctx(), nc);
  auto check = [&](const char* what, const std::function<Status(float*, bf16*)>& write) {
    SCOPED_TRACE(what);
    DeviceTensor<float> plain(ctx(), start), copied(ctx(), start);
    d_copy.Poison();
    ABLATE_EXPECT_OP(ctx(), write(plain.get(), nullptr));
    ABLATE_EXPECT_OP(ctx(), write(copied.get(), d_copy.get()));
    ABLATE_EXPECT_OP(ctx(), cuda::to_bf16(ctx(), d_want.get(), copied.get(), nc));
    EXPECT_EQ(copied.Get(), plain.Get()) << "dx differs when the copy is written too";
    EXPECT_EQ(d_copy.Get(), d_want.Get()) << "the copy is not to_bf16(dx)";
  };
  for (cpu::Output mode : {cpu::Output::kAdd, cpu::Output::kOverwrite}) {
    check(mode == cpu::Output::kAdd ? "rmsnorm bwd +=" : "rmsnorm bwd =", [&](float* dx, bf16* b) {
      return cuda::rmsnorm_backward<float>(ctx(), dx, d_dout.get(), d_x.get(), d_rstd.get(), n, c,
                                           mode, b);
    });
  }
  check("mix bwd dx =", [&](float* dx, bf16* b) {
    cuda::MixGrads g{dx, cpu::Output::kOverwrite, nullptr, cpu::Output::kAdd, {d_gw.get(), 1.f}, {},
                     b};
    return cuda::residual_mix_backward<float, float>(ctx(), g, d_dout.get(), d_x.get(),
                                                     cuda::MixWeight::Param(d_w.get()), nullptr,
                                                     cuda::MixWeight{}, nc);
  });
  check("add", [&](float* dx, bf16* b) { return cuda::add_into(ctx(), dx, d_dout.get(), nc, b); });
  std::vector<float> sum = start;
  for (int64_t i = 0; i < nc; ++i) sum[i] += dout[i];
  DeviceTensor<float> added(ctx(), start);
  ABLATE_EXPECT_OP(ctx(), cuda::add_into(ctx(), added.get(), d_dout.get(), nc));
  EXPECT_EQ(added.Get(), sum) << "add_into is not the exact fp32 sum";
}

// A bf16 stream lives in bf16 buffers (gpt.cc): every op that reads or writes it gives the bits
// it gives on fp32 buffers holding the same bf16 values, as the model ran before.
TEST_F(CudaOps, Bf16StreamBuffersGiveTheBitsOfFp32BuffersWithTheSameValues) {
  int64_t n = 300, c = 768, nc = n * c;
  std::vector<float> x = RoundBf16(Random(nc, -2.f, 2.f)), y = RoundBf16(Random(nc, -2.f, 2.f)),
                     emb = Random(nc, -2.f, 2.f), dout = Random(nc), start = Random(nc);
  DeviceTensor<float> d_x(ctx(), x), d_y(ctx(), y), d_emb(ctx(), emb), d_dout(ctx(), dout),
      d_w(ctx(), std::vector<float>{0.7f, -0.4f});
  DeviceTensor<bf16> d_xb(ctx(), x), d_yb(ctx(), y);
  cuda::MixWeight a = cuda::MixWeight::Param(d_w.get()).RoundedIf(cpu::Rounding::kBf16);
  cuda::MixWeight b = cuda::MixWeight::Param(d_w.get() + 1).RoundedIf(cpu::Rounding::kBf16);
  {  // x0 = norm(embedding): written as bf16 directly, or in fp32 and rounded in place before
    DeviceTensor<float> f(ctx(), nc), rstd_f(ctx(), n), rstd_b(ctx(), n);
    DeviceTensor<bf16> o(ctx(), nc);
    ABLATE_EXPECT_OP(ctx(), cuda::rmsnorm_forward<float, float>(ctx(), f.get(), rstd_f.get(),
                                                                d_emb.get(), n, c));
    ABLATE_EXPECT_OP(
        ctx(), cuda::rmsnorm_forward<float, bf16>(ctx(), o.get(), rstd_b.get(), d_emb.get(), n, c));
    EXPECT_EQ(o.Get(), RoundBf16(f.Get())) << "x0 norm";
    EXPECT_EQ(rstd_b.Get(), rstd_f.Get());
  }
  {  // the blocks' norms read the stream
    DeviceTensor<bf16> of(ctx(), nc), ob(ctx(), nc);
    DeviceTensor<float> rf(ctx(), n), rb(ctx(), n);
    ABLATE_EXPECT_OP(
        ctx(), cuda::rmsnorm_forward<float, bf16>(ctx(), of.get(), rf.get(), d_x.get(), n, c));
    ABLATE_EXPECT_OP(
        ctx(), cuda::rmsnorm_forward<bf16, bf16>(ctx(), ob.get(), rb.get(), d_xb.get(), n, c));
    EXPECT_EQ(ob.Get(), of.Get()) << "block norm";
    EXPECT_EQ(rb.Get(), rf.Get());
    DeviceTensor<float> df(ctx(), start), db(ctx(), start);
    ABLATE_EXPECT_OP(ctx(), cuda::rmsnorm_backward<float>(ctx(), df.get(), d_dout.get(), d_x.get(),
                                                          rf.get(), n, c, cpu::Output::kAdd));
    ABLATE_EXPECT_OP(ctx(), cuda::rmsnorm_backward<bf16>(ctx(), db.get(), d_dout.get(), d_xb.get(),
                                                         rf.get(), n, c, cpu::Output::kAdd));
    EXPECT_EQ(db.Get(), df.Get()) << "norm backward";
  }
  {  // the shortcut mix and the skip add, forward and backward
    DeviceTensor<float> of(ctx(), nc);
    DeviceTensor<bf16> ob(ctx(), nc);
    ABLATE_EXPECT_OP(ctx(),
                     cuda::residual_mix_forward<float, float, float>(
                         ctx(), of.get(), d_x.get(), a, d_y.get(), b, nc, cpu::Rounding::kBf16));
    ABLATE_EXPECT_OP(ctx(),
                     cuda::residual_mix_forward<bf16, bf16, bf16>(
                         ctx(), ob.get(), d_xb.get(), a, d_yb.get(), b, nc, cpu::Rounding::kBf16));
    EXPECT_EQ(ob.Get(), of.Get()) << "mix forward";
    DeviceTensor<float> dxf(ctx(), nc), dxb(ctx(), nc), dyf(ctx(), start), dyb(ctx(), start),
        gf(ctx(), std::vector<float>{0.f, 0.f}), gb(ctx(), std::vector<float>{0.f, 0.f});
    cuda::MixGrads g_f{dxf.get(),         cpu::Output::kOverwrite, dyf.get(),
                       cpu::Output::kAdd, {gf.get(), 1.f},         {gf.get() + 1, 1.f}};
    cuda::MixGrads g_b{dxb.get(),         cpu::Output::kOverwrite, dyb.get(),
                       cpu::Output::kAdd, {gb.get(), 1.f},         {gb.get() + 1, 1.f}};
    ABLATE_EXPECT_OP(ctx(), cuda::residual_mix_backward<float, float>(
                                ctx(), g_f, d_dout.get(), d_x.get(), a, d_y.get(), b, nc));
    ABLATE_EXPECT_OP(ctx(), cuda::residual_mix_backward<bf16, bf16>(
                                ctx(), g_b, d_dout.get(), d_xb.get(), a, d_yb.get(), b, nc));
    EXPECT_EQ(dxb.Get(), dxf.Get()) << "mix backward dx";
    EXPECT_EQ(dyb.Get(), dyf.Get()) << "mix backward dy";
    EXPECT_EQ(gb.Get(), gf.Get()) << "mix backward weights";
  }
}

TEST_F(CudaOps, MlpActivationMatchesCpu) {
  int64_t n = 10000;
  for (cpu::MlpAct act : {cpu::MlpAct::kRelu2, cpu::MlpAct::kGelu}) {
    std::vector<float> u = RoundBf16(Random(n, -3.f, 3.f)), dout = RoundBf16(Random(n));
    DeviceTensor<bf16> d_u(ctx(), u), d_out(ctx(), n), d_dinp(ctx(), dout);
    d_out.Poison();
    ABLATE_EXPECT_OP(ctx(), cuda::mlp_act_forward(ctx(), d_out.get(), d_u.get(), n, act));
    std::vector<float> want(n);
    cpu::mlp_act_forward(want.data(), u.data(), n, act);
    EXPECT_LT(RelError(d_out.Get(), want), 1e-2);
    // In place over dout, as the model runs it.
    ABLATE_EXPECT_OP(ctx(),
                     cuda::mlp_act_backward(ctx(), d_dinp.get(), d_dinp.get(), d_u.get(), n, act));
    std::vector<float> dinp(n);
    cpu::mlp_act_backward(dinp.data(), dout.data(), u.data(), n, act, cpu::Output::kOverwrite);
    EXPECT_LT(RelError(d_dinp.Get(), dinp), 1e-2);
  }
}

TEST_F(CudaOps, MatmulForwardMatchesCpu) {
  int64_t n = 130, c = 96, oc = 200;
  std::vector<float> x = RoundBf16(Random(n * c)), w = RoundBf16(Random(oc * c));
  DeviceTensor<bf16> d_x(ctx(), x), d_w(ctx(), w), d_out_b(ctx(), n * oc);
  std::vector<float> base = Random(n * oc);
  DeviceTensor<float> d_out(ctx(), n * oc), d_acc(ctx(), base);
  d_out.Poison();
  d_out_b.Poison();
  ABLATE_EXPECT_OP(ctx(),
                   cuda::matmul_forward<float>(ctx(), d_out.get(), d_x.get(), d_w.get(), n, c, oc));
  ABLATE_EXPECT_OP(
      ctx(), cuda::matmul_forward<bf16>(ctx(), d_out_b.get(), d_x.get(), d_w.get(), n, c, oc));
  ABLATE_EXPECT_OP(ctx(), cuda::matmul_forward<float>(ctx(), d_acc.get(), d_x.get(), d_w.get(), n,
                                                      c, oc, cpu::Output::kAdd));
  std::vector<float> want(n * oc), want_acc = base;
  cpu::matmul_forward(want.data(), x.data(), w.data(), n, c, oc);
  cpu::matmul_forward(want_acc.data(), x.data(), w.data(), n, c, oc, cpu::Output::kAdd);
  EXPECT_LT(RelError(d_out.Get(), want), 1e-5);
  EXPECT_LT(RelError(d_out_b.Get(), want), 1e-2);
  EXPECT_LT(RelError(d_acc.Get(), want_acc), 1e-5);
  // base + x·wᵀ into another buffer (C ≠ D): base untouched, out as the in-place add.
  DeviceTensor<float> d_base(ctx(), base), d_sum(ctx(), n * oc);
  d_sum.Poison();
  ABLATE_EXPECT_OP(ctx(), cuda::matmul_forward_add(ctx(), d_sum.get(), d_base.get(), d_x.get(),
                                                   d_w.get(), n, c, oc));
  EXPECT_LT(RelError(d_sum.Get(), want_acc), 1e-5);
  EXPECT_EQ(d_base.Get(), base);
}

TEST_F(CudaOps, MatmulBackwardMatchesCpu) {
  int64_t n = 130, c = 96, oc = 200;
  std::vector<float> x = RoundBf16(Random(n * c)), w = RoundBf16(Random(oc * c));
  std::vector<float> dout = RoundBf16(Random(n * oc)), dw = Random(oc * c), dx_base = Random(n * c);
  DeviceTensor<bf16> d_x(ctx(), x), d_w(ctx(), w), d_dout(ctx(), dout), d_dx_b(ctx(), n * c);
  DeviceTensor<float> d_dx(ctx(), dx_base), d_dw(ctx(), dw);
  d_dx_b.Poison();
  ABLATE_EXPECT_OP(
      ctx(), cuda::matmul_backward<float>(ctx(), d_dx.get(), d_dw.get(), d_dout.get(), d_x.get(),
                                          d_w.get(), n, c, oc, cpu::Output::kAdd));
  ABLATE_EXPECT_OP(
      ctx(), cuda::matmul_backward<bf16>(ctx(), d_dx_b.get(), nullptr, d_dout.get(), d_x.get(),
                                         d_w.get(), n, c, oc, cpu::Output::kOverwrite));
  std::vector<float> dx = dx_base, dx_only(n * c);
  cpu::matmul_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), n, c, oc,
                       cpu::Output::kAdd);
  cpu::matmul_backward(dx_only.data(), static_cast<float*>(nullptr), dout.data(), x.data(),
                       w.data(), n, c, oc, cpu::Output::kOverwrite);
  EXPECT_LT(RelError(d_dx.Get(), dx), 1e-5);
  EXPECT_LT(RelError(d_dw.Get(), dw), 1e-5);
  EXPECT_LT(RelError(d_dx_b.Get(), dx_only), 1e-2);
}

// Every transpose combination of the row-major → column-major mapping, at sizes that are not
// multiples of 8 (odd leading dimensions: bf16 rows only 2-byte aligned, as an odd vocab_size or
// a small model_dim gives), with alpha and beta = 0.5 into C == D.
TEST_F(CudaOps, GemmAllTransposesAtOddShapesMatchCpu) {
  int64_t m = 37, n = 51, k = 29;
  for (cpu::Trans ta : {cpu::Trans::kNo, cpu::Trans::kYes}) {
    for (cpu::Trans tb : {cpu::Trans::kNo, cpu::Trans::kYes}) {
      int64_t lda = ta == cpu::Trans::kNo ? k : m, ldb = tb == cpu::Trans::kNo ? n : k;
      std::vector<float> a = RoundBf16(Random(m * k)), b = RoundBf16(Random(k * n));
      std::vector<float> base = Random(m * n), want = base;
      DeviceTensor<bf16> d_a(ctx(), a), d_b(ctx(), b);
      DeviceTensor<float> d_c(ctx(), base);
      ABLATE_EXPECT_OP(ctx(), cuda::Gemm<float>(ctx(), ta, tb, m, n, k, 0.75f, d_a.get(), lda,
                                                d_b.get(), ldb, 0.5f, d_c.get(), d_c.get(), n));
      cpu::Gemm<float>(ta, tb, m, n, k, 0.75f, a.data(), lda, b.data(), ldb, 0.5f, want.data(), n);
      EXPECT_LT(RelError(d_c.Get(), want), 1e-5)
          << "ta " << int(ta == cpu::Trans::kYes) << " tb " << int(tb == cpu::Trans::kYes);
    }
  }
  // The model's own calls at an odd width: forward into bf16, backward with both outputs.
  int64_t rows = 45, c = 37, oc = 53;
  std::vector<float> x = RoundBf16(Random(rows * c)), w = RoundBf16(Random(oc * c)),
                     dout = RoundBf16(Random(rows * oc));
  DeviceTensor<bf16> d_x(ctx(), x), d_w(ctx(), w), d_dout(ctx(), dout), d_y(ctx(), rows * oc);
  DeviceTensor<float> d_dx(ctx(), rows * c), d_dw(ctx(), std::vector<float>(oc * c, 0.f));
  d_y.Poison();
  d_dx.Poison();
  ABLATE_EXPECT_OP(ctx(),
                   cuda::matmul_forward<bf16>(ctx(), d_y.get(), d_x.get(), d_w.get(), rows, c, oc));
  ABLATE_EXPECT_OP(
      ctx(), cuda::matmul_backward<float>(ctx(), d_dx.get(), d_dw.get(), d_dout.get(), d_x.get(),
                                          d_w.get(), rows, c, oc, cpu::Output::kOverwrite));
  std::vector<float> y(rows * oc), dx(rows * c), dw(oc * c, 0.f);
  cpu::matmul_forward(y.data(), x.data(), w.data(), rows, c, oc);
  cpu::matmul_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rows, c, oc,
                       cpu::Output::kOverwrite);
  EXPECT_LT(RelError(d_y.Get(), y), 1e-2);
  EXPECT_LT(RelError(d_dx.Get(), dx), 1e-5);
  EXPECT_LT(RelError(d_dw.Get(), dw), 1e-5);
}

// The Newton–Schulz shape: a strided batch of X Xᵀ products into bf16, slice by slice.
TEST_F(CudaOps, BatchedGemmMatchesPerSliceProducts) {
  int64_t batch = 3, r = 48, c = 80;
  std::vector<float> x = RoundBf16(Random(batch * r * c));
  DeviceTensor<bf16> d_x(ctx(), x), d_a(ctx(), batch * r * r);
  d_a.Poison();
  cuda::GemmBatch gb{int(batch), r * c, r * c, r * r};
  ABLATE_EXPECT_OP(
      ctx(), cuda::Gemm<bf16>(ctx(), cpu::Trans::kNo, cpu::Trans::kYes, r, r, c, 1.f, d_x.get(), c,
                              d_x.get(), c, 0.f, nullptr, d_a.get(), r, gb));
  std::vector<float> want(batch * r * r);
  for (int64_t s = 0; s < batch; ++s) {
    cpu::Gemm<float>(cpu::Trans::kNo, cpu::Trans::kYes, r, r, c, 1.f, x.data() + s * r * c, c,
                     x.data() + s * r * c, c, 0.f, want.data() + s * r * r, r);
  }
  EXPECT_LT(RelError(d_a.Get(), want), 1e-2);
}

// Both classifier kernels (softcap_cross_entropy.h, ClassifierImpl), at a small vocabulary, at
// the records' 50,304 (the row kernel's 200 logits per thread) and past what the row kernel
// holds (it falls back to the two passes).
TEST_F(CudaOps, FusedClassifierMatchesCpuForwardThenBackward) {
  float dloss = 0.37f;
  for (cuda::ClassifierImpl impl :
       {cuda::ClassifierImpl::kTwoPass, cuda::ClassifierImpl::kRowInRegisters}) {
    for (int64_t v : {int64_t(1000), int64_t(50304), int64_t(60000)}) {
      int64_t n = v == 1000 ? 37 : 5;
      for (cpu::Softcap cap : {cpu::Softcap{}, cpu::Softcap{cpu::SoftcapKind::kTanh, 15.0},
                               cpu::Softcap{cpu::SoftcapKind::kSigmoid, 30.0}}) {
        std::string at = "impl " + std::to_string(int(impl)) + ", V " + std::to_string(v) +
                         ", cap kind " + std::to_string(int(cap.kind));
        std::vector<float> logits = Random(n * v, -20.f, 20.f);
        std::vector<int32_t> targets = RandomIds(n, int32_t(v));
        DeviceTensor<float> d_logits(ctx(), logits), d_losses(ctx(), n), d_eval(ctx(), n);
        DeviceTensor<bf16> d_dlogits(ctx(), n * v);
        DeviceTensor<int32_t> d_targets(ctx(), targets);
        d_losses.Poison();
        d_eval.Poison();
        d_dlogits.Poison();
        ABLATE_EXPECT_OP(ctx(), cuda::softcap_cross_entropy_forward(
                                    ctx(), d_losses.get(), d_dlogits.get(), d_logits.get(),
                                    d_targets.get(), n, v, cap, dloss, impl));
        ABLATE_EXPECT_OP(
            ctx(), cuda::softcap_cross_entropy_forward(ctx(), d_eval.get(), nullptr, d_logits.get(),
                                                       d_targets.get(), n, v, cap, 0.f, impl));
        std::vector<float> losses(n), lse(n), dlogits(n * v);
        cpu::softcap_cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(),
                                           n, v, cap);
        cpu::softcap_cross_entropy_backward(dlogits.data(), logits.data(), lse.data(),
                                            targets.data(), n, v, cap, dloss);
        EXPECT_LT(RelError(d_losses.Get(), losses), 1e-5) << at;
        EXPECT_EQ(d_eval.Get(), d_losses.Get()) << at;
        EXPECT_LT(RelError(d_dlogits.Get(), dlogits), 1e-2) << at;
      }
    }
  }
}

// The chunked head (forward + backward, and forward alone for evaluation) against the CPU head
// on n rows of width c and a vocabulary of v, through chunks of chunk_rows rows in groups of
// group_rows (the last chunk of a group short whenever chunk_rows does not divide it, the last
// group short whenever group_rows does not divide n).
void ExpectChunkedHeadMatchesCpu(cuda::CudaContext& ctx, int64_t n, int64_t c, int64_t v,
                                 int64_t chunk_rows, int64_t group_rows) {
  cpu::Softcap cap{cpu::SoftcapKind::kSigmoid, 30.0};
  std::vector<float> x = RoundBf16(Random(n * c)), w = RoundBf16(Random(v * c, -0.3f, 0.3f));
  std::vector<int32_t> targets = RandomIds(n, int32_t(v));
  // dw starts non-zero (the head accumulates), but its increment is ~1e-3 of that base, so the
  // comparison is of the increments: a wrong dw would otherwise pass within the tolerance.
  std::vector<float> dw0 = Random(v * c), dw(v * c, 0.f);
  float dloss = 1.f / float(n);
  DeviceTensor<bf16> d_x(ctx, x), d_w(ctx, w), d_dlogits(ctx, group_rows * v);
  DeviceTensor<float> d_logits(ctx, chunk_rows * v), d_losses(ctx, n), d_eval(ctx, n),
      d_dx(ctx, n * c), d_dw(ctx, dw0);
  DeviceTensor<int32_t> d_targets(ctx, targets);
  cuda::LmHeadScratch scratch{d_logits.get(), d_dlogits.get(), chunk_rows, group_rows};
  d_losses.Poison();
  d_eval.Poison();
  d_dx.Poison();
  ABLATE_EXPECT_OP(ctx, cuda::lm_head_forward_backward(ctx, d_losses.get(), d_dx.get(), d_dw.get(),
                                                       d_x.get(), d_w.get(), d_targets.get(), n, c,
                                                       v, cap, dloss, scratch));
  ABLATE_EXPECT_OP(ctx, cuda::lm_head_forward(ctx, d_eval.get(), d_x.get(), d_w.get(),
                                              d_targets.get(), n, c, v, cap, scratch));
  std::vector<float> logits(n * v), losses(n), lse(n), dx(n * c, 0.f);
  cpu::lm_head_forward(logits.data(), losses.data(), lse.data(), x.data(), w.data(), targets.data(),
                       n, c, v, cap);
  cpu::lm_head_backward(dx.data(), dw.data(), logits.data(), lse.data(), x.data(), w.data(),
                        targets.data(), n, c, v, cap, dloss);
  EXPECT_LT(RelError(d_losses.Get(), losses), 1e-4);
  EXPECT_LT(RelError(d_eval.Get(), losses), 1e-4);
  std::vector<float> gpu_dw = d_dw.Get();
  for (size_t i = 0; i < gpu_dw.size(); ++i) gpu_dw[i] -= dw0[i];
  EXPECT_LT(RelError(d_dx.Get(), dx), 2e-2);
  EXPECT_LT(RelError(gpu_dw, dw), 2e-2);
}

TEST_F(CudaOps, ChunkedHeadMatchesCpuHead) {
  ExpectChunkedHeadMatchesCpu(ctx(), 150, 64, 300, 64, 64);  // 3 chunks, the last short
}

// dW once per group: groups of two chunks and a short last group of one short chunk; a group
// that chunk_rows does not divide (its last chunk short, then the next group's first chunk
// starts mid-way through no chunk grid).
TEST_F(CudaOps, GroupedHeadMatchesCpuHead) {
  ExpectChunkedHeadMatchesCpu(ctx(), 330, 64, 300, 64, 128);
  ExpectChunkedHeadMatchesCpu(ctx(), 330, 64, 300, 64, 100);
  ExpectChunkedHeadMatchesCpu(ctx(), 330, 64, 300, 64, 330);  // one group of the whole n
}

// The records' padded vocabulary (50,304) at the model width, over four chunks of rows (the last
// short) in two groups: full-width rows of logits, so every block of the row-wise kernels covers
// many tiles.
TEST_F(CudaOps, ChunkedHeadAtTheRecordVocabularyMatchesCpuHead) {
  ExpectChunkedHeadMatchesCpu(ctx(), 700, 768, 50304, 192, 384);
}

// The reported loss is summed in double (CPU twin: cpu::mean_loss); a float sum was off by
// ~1e-3 of the loss at 65,536 tokens.
TEST_F(CudaOps, LossAccumulateAddsTheMeanOverTheDivisorInDouble) {
  int64_t n = 65536;
  std::vector<float> losses = Random(n, 0.5f, 12.f);
  DeviceTensor<float> d_losses(ctx(), losses);
  DeviceTensor<double> d_acc(ctx(), std::vector<double>{0.5});
  ABLATE_EXPECT_OP(ctx(), cuda::loss_accumulate(ctx(), d_acc.get(), d_losses.get(), n, 4));
  double acc = 0;
  ASSERT_TRUE(ctx().ToHost(&acc, d_acc.get(), sizeof(double)).ok());
  long double sum = 0;
  for (float l : losses) sum += l;
  EXPECT_NEAR(acc, 0.5 + double(sum / n) / 4.0, 1e-12);

  // A 65,536-token batch of equal losses: exact (the r20 first step, 10.8258399).
  d_losses.Set(std::vector<float>(size_t(n), 10.8258399f));
  d_acc.Set(std::vector<double>{0.0});
  ABLATE_EXPECT_OP(ctx(), cuda::loss_accumulate(ctx(), d_acc.get(), d_losses.get(), n, 1));
  ASSERT_TRUE(ctx().ToHost(&acc, d_acc.get(), sizeof(double)).ok());
  EXPECT_EQ(acc, double(10.8258399f));

  // loss_move hands the float on and clears the accumulator.
  DeviceTensor<float> d_out(ctx(), 1);
  d_out.Poison();
  ABLATE_EXPECT_OP(ctx(), cuda::loss_move(ctx(), d_out.get(), d_acc.get()));
  EXPECT_EQ(d_out.Get()[0], 10.8258399f);
  ASSERT_TRUE(ctx().ToHost(&acc, d_acc.get(), sizeof(double)).ok());
  EXPECT_EQ(acc, 0.0);
}

TEST_F(CudaOps, ConversionsAndQkvSplitAreExact) {
  int64_t n = 33, c = 48;
  std::vector<float> x = Random(n * c);
  DeviceTensor<float> d_x(ctx(), x);
  DeviceTensor<bf16> d_b(ctx(), n * c);
  d_b.Poison();
  ABLATE_EXPECT_OP(ctx(), cuda::to_bf16(ctx(), d_b.get(), d_x.get(), n * c));
  EXPECT_EQ(d_b.Get(), RoundBf16(x));

  std::vector<float> qkv = RoundBf16(Random(n * 3 * c));
  DeviceTensor<bf16> d_qkv(ctx(), qkv), d_q(ctx(), n * c), d_k(ctx(), n * c), d_v(ctx(), n * c);
  for (auto* t : {&d_q, &d_k, &d_v}) t->Poison();
  ABLATE_EXPECT_OP(ctx(),
                   cuda::split_qkv(ctx(), d_q.get(), d_k.get(), d_v.get(), d_qkv.get(), n, c));
  std::vector<float> q = d_q.Get(), k = d_k.Get(), v = d_v.Get();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      ASSERT_EQ(q[i * c + j], qkv[i * 3 * c + j]);
      ASSERT_EQ(k[i * c + j], qkv[i * 3 * c + c + j]);
      ASSERT_EQ(v[i * c + j], qkv[i * 3 * c + 2 * c + j]);
    }
  }
  std::vector<float> dq = RoundBf16(Random(n * c)), dk = RoundBf16(Random(n * c)),
                     dv = RoundBf16(Random(n * c));
  DeviceTensor<float> d_dq(ctx(), dq), d_dk(ctx(), dk), d_dv(ctx(), dv);
  d_qkv.Poison();
  ABLATE_EXPECT_OP(ctx(),
                   cuda::merge_qkv(ctx(), d_qkv.get(), d_dq.get(), d_dk.get(), d_dv.get(), n, c));
  std::vector<float> merged = d_qkv.Get();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      ASSERT_EQ(merged[i * 3 * c + j], dq[i * c + j]);
      ASSERT_EQ(merged[i * 3 * c + c + j], dk[i * c + j]);
      ASSERT_EQ(merged[i * 3 * c + 2 * c + j], dv[i * c + j]);
    }
  }
}

// The fused q/k/v passes (trainer/cuda/qkv.h) against the single passes they replace, on the
// GPU: the same bits (they sum in the same order and spell the same fmaf's). The CPU emulator
// test (qkv_emulated_test) checks the same kernels against the CPU twins.
struct FusedQkvCase {
  int64_t nh, hd;
  bool qk_norm;
  cuda::ValueMixKind mix;
  cpu::RopeKind rope;
};

void CheckFusedQkv(cuda::CudaContext& ctx, const FusedQkvCase& f) {
  const int64_t b = 2, t = 37, n = b * t, nh = f.nh, hd = f.hd, c = nh * hd, vocab = 11;
  SCOPED_TRACE("hd " + std::to_string(hd) + (f.qk_norm ? " qk_norm" : "") + " mix " +
               std::to_string(int(f.mix)));
  Result<cuda::RopeTable> table = cuda::rope_table(ctx, t, hd, f.rope, 10000.0);
  ASSERT_TRUE(table.ok()) << table.error().message;
  std::vector<float> lam = {0.65f, 0.3f};
  std::vector<int32_t> ids = RandomIds(n, int32_t(vocab));
  DeviceTensor<bf16> d_qkv(ctx, RoundBf16(Random(n * 3 * c, -2.f, 2.f)));
  DeviceTensor<bf16> d_v1(ctx, RoundBf16(Random(n * c, -2.f, 2.f)));
  DeviceTensor<float> d_table(ctx, Random(vocab * c)), d_lam(ctx, lam), d_ve(ctx, n * c);
  DeviceTensor<int32_t> d_ids(ctx, ids);

  // The single passes.
  DeviceTensor<bf16> s_q(ctx, n * c), s_k(ctx, n * c), s_v(ctx, n * c), s_qn(ctx, n * c),
      s_kn(ctx, n * c), s_vm(ctx, n * c);
  DeviceTensor<float> s_qr(ctx, n * nh), s_kr(ctx, n * nh);
  ABLATE_EXPECT_OP(ctx, cuda::split_qkv(ctx, s_q.get(), s_k.get(), s_v.get(), d_qkv.get(), n, c));
  cuda::MixWeight a, bw;
  if (f.mix == cuda::ValueMixKind::kResidual) {
    a = cuda::MixWeight::OneMinus(d_lam.get());
    bw = cuda::MixWeight::Param(d_lam.get());
    ABLATE_EXPECT_OP(ctx, cuda::residual_mix_forward<bf16, bf16, bf16>(ctx, s_vm.get(), s_v.get(),
                                                                       a, d_v1.get(), bw, n * c));
  } else if (f.mix == cuda::ValueMixKind::kEmbed) {
    a = cuda::MixWeight::Param(d_lam.get());
    bw = cuda::MixWeight::Param(d_lam.get() + 1);
    ABLATE_EXPECT_OP(ctx,
                     cuda::embedding_forward(ctx, d_ve.get(), d_table.get(), d_ids.get(), n, c));
    ABLATE_EXPECT_OP(ctx, cuda::residual_mix_forward<bf16, bf16, float>(ctx, s_vm.get(), s_v.get(),
                                                                        a, d_ve.get(), bw, n * c));
  }
  const bf16* q_in = s_q.get();
  const bf16* k_in = s_k.get();
  if (f.qk_norm) {
    ABLATE_EXPECT_OP(
        ctx, cuda::rmsnorm_forward<bf16, bf16>(ctx, s_qn.get(), s_qr.get(), s_q.get(), n * nh, hd));
    ABLATE_EXPECT_OP(
        ctx, cuda::rmsnorm_forward<bf16, bf16>(ctx, s_kn.get(), s_kr.get(), s_k.get(), n * nh, hd));
    q_in = s_qn.get();
    k_in = s_kn.get();
  }
  ABLATE_EXPECT_OP(ctx, cuda::rope_forward<bf16>(ctx, s_qn.get(), q_in, *table, b, t, nh, hd));
  ABLATE_EXPECT_OP(ctx, cuda::rope_forward<bf16>(ctx, s_kn.get(), k_in, *table, b, t, nh, hd));

  // The fused pass.
  DeviceTensor<bf16> q_raw(ctx, n * c), k_raw(ctx, n * c), v_raw(ctx, n * c), q(ctx, n * c),
      k(ctx, n * c), v(ctx, n * c);
  DeviceTensor<float> q_rstd(ctx, n * nh), k_rstd(ctx, n * nh);
  for (auto* x : {&q_raw, &k_raw, &v_raw, &q, &k, &v}) x->Poison();
  cuda::QkvForwardArgs fa;
  fa.qkv = d_qkv.get();
  fa.q_raw = q_raw.get();
  fa.k_raw = k_raw.get();
  fa.v_raw = v_raw.get();
  fa.q = q.get();
  fa.k = k.get();
  fa.v = f.mix == cuda::ValueMixKind::kNone ? v_raw.get() : v.get();
  fa.q_rstd = q_rstd.get();
  fa.k_rstd = k_rstd.get();
  fa.n = n;
  fa.t = t;
  fa.nh = nh;
  fa.hd = hd;
  fa.qk_norm = f.qk_norm;
  fa.mix = f.mix;
  fa.a = a;
  fa.b = bw;
  fa.v1 = d_v1.get();
  if (f.mix == cuda::ValueMixKind::kEmbed) {
    fa.ve_table = d_table.get();
    fa.ids = d_ids.get();
  }
  ABLATE_EXPECT_OP(ctx, cuda::qkv_forward(ctx, fa, *table));
  EXPECT_EQ(v_raw.Get(), s_v.Get());
  EXPECT_EQ(q.Get(), s_qn.Get());
  EXPECT_EQ(k.Get(), s_kn.Get());
  if (f.mix != cuda::ValueMixKind::kNone) {
    EXPECT_EQ(v.Get(), s_vm.Get());
  }
  if (f.qk_norm) {
    EXPECT_EQ(q_raw.Get(), s_q.Get());
    EXPECT_EQ(k_raw.Get(), s_k.Get());
    EXPECT_EQ(q_rstd.Get(), s_qr.Get());
    EXPECT_EQ(k_rstd.Get(), s_kr.Get());
  }

  // Backward: the single passes (RoPE's transpose in place, the norm's backward, the merge)
  // against the fused one.
  std::vector<float> dq = Random(n * c), dk = Random(n * c), dv = Random(n * c);
  DeviceTensor<float> s_dq(ctx, dq), s_dk(ctx, dk), d_dq(ctx, dq), d_dk(ctx, dk), d_dv(ctx, dv),
      s_dqr(ctx, n * c), s_dkr(ctx, n * c);
  ABLATE_EXPECT_OP(ctx,
                   cuda::rope_backward<float>(ctx, s_dq.get(), s_dq.get(), *table, b, t, nh, hd));
  ABLATE_EXPECT_OP(ctx,
                   cuda::rope_backward<float>(ctx, s_dk.get(), s_dk.get(), *table, b, t, nh, hd));
  const float* dq_raw = s_dq.get();
  const float* dk_raw = s_dk.get();
  if (f.qk_norm) {
    ABLATE_EXPECT_OP(
        ctx, cuda::rmsnorm_backward<bf16>(ctx, s_dqr.get(), s_dq.get(), s_q.get(), s_qr.get(),
                                          n * nh, hd, cuda::Output::kOverwrite));
    ABLATE_EXPECT_OP(
        ctx, cuda::rmsnorm_backward<bf16>(ctx, s_dkr.get(), s_dk.get(), s_k.get(), s_kr.get(),
                                          n * nh, hd, cuda::Output::kOverwrite));
    dq_raw = s_dqr.get();
    dk_raw = s_dkr.get();
  }
  DeviceTensor<bf16> s_dqkv(ctx, n * 3 * c), dqkv(ctx, n * 3 * c);
  ABLATE_EXPECT_OP(ctx, cuda::merge_qkv(ctx, s_dqkv.get(), dq_raw, dk_raw, d_dv.get(), n, c));
  dqkv.Poison();
  cuda::QkvBackwardArgs ba;
  ba.dqkv = dqkv.get();
  ba.dq = d_dq.get();
  ba.dk = d_dk.get();
  ba.dv = d_dv.get();
  ba.q_raw = q_raw.get();
  ba.k_raw = k_raw.get();
  ba.q_rstd = q_rstd.get();
  ba.k_rstd = k_rstd.get();
  ba.n = n;
  ba.t = t;
  ba.nh = nh;
  ba.hd = hd;
  ba.qk_norm = f.qk_norm;
  ABLATE_EXPECT_OP(ctx, cuda::qkv_backward(ctx, ba, *table));
  EXPECT_EQ(dqkv.Get(), s_dqkv.Get());
}

TEST_F(CudaOps, FusedQkvPassesGiveTheSinglePassesBits) {
  using cuda::ValueMixKind;
  const cpu::RopeKind full = cpu::RopeKind::kFull, half = cpu::RopeKind::kHalfTruncated;
  for (const FusedQkvCase& f : {FusedQkvCase{6, 128, true, ValueMixKind::kEmbed, half},  // r20
                                FusedQkvCase{4, 64, true, ValueMixKind::kResidual, full},
                                FusedQkvCase{3, 96, true, ValueMixKind::kNone, full},
                                FusedQkvCase{2, 128, false, ValueMixKind::kNone, full},
                                FusedQkvCase{5, 6, false, ValueMixKind::kResidual, full}}) {
    CheckFusedQkv(ctx(), f);
  }
}

TEST_F(CudaOps, FusedQkvRefusesAHeadDimTheRopeTableWasNotBuiltFor) {
  Result<cuda::RopeTable> table = cuda::rope_table(ctx(), 8, 64, cpu::RopeKind::kFull, 10000.0);
  ASSERT_TRUE(table.ok()) << table.error().message;
  cuda::QkvForwardArgs fa;
  fa.n = 16;
  fa.t = 8;
  fa.nh = 2;
  fa.hd = 32;
  Status s = cuda::qkv_forward(ctx(), fa, *table);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not fit the RoPE table"), std::string::npos) << s.message();
  fa.hd = 64;
  fa.t = 16;
  s = cuda::qkv_forward(ctx(), fa, *table);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("(T 16, HD 64)"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ablate
