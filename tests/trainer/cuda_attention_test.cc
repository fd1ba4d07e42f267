// CUDA attention (tiled WMMA kernels, register-resident mma kernels and the warp-per-query
// kernels) against the CPU twin on fresh random bf16 q, k, v, for each mask of MODEL.md: causal,
// document masking, block sliding windows (including the diagonal-block-only window of r20's
// early short layers) and windows with documents; every tiled case has an mma twin under the
// same tolerances. Sequence lengths are not multiples of the 64-row tiles, so partial tiles are
// exercised. Outputs are poisoned first. Then the mma kernels against the tiled ones directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/trainer/cuda_test_util.h"
#include "trainer/cpu/attention.h"
#include "trainer/cuda/attention.h"

namespace ablate {
namespace {

using cuda::AttentionImpl;
using cuda::bf16;
using testing::DeviceTensor;
using testing::Random;
using testing::RandomIds;
using testing::RelError;
using testing::RoundBf16;

struct AttentionCase {
  std::string name;
  int64_t hd;
  AttentionImpl impl;
  cpu::AttentionMask mask;
  int64_t t = 200;
  int64_t b = 2;
  // Document lengths drawn uniformly from [doc_min, doc_max]; 0: a BOS every 37 tokens.
  int64_t doc_min = 0, doc_max = 0;
};

class CudaAttention : public testing::CudaTest,
                      public ::testing::WithParamInterface<AttentionCase> {};

// Tokens with a BOS (id 1) every 37 positions and one mid-sequence, or, when the case says so,
// documents of random lengths in [doc_min, doc_max] as FineWeb's are (each row starts mid-way
// through one, as a shard slice does).
std::vector<int32_t> Tokens(const AttentionCase& p) {
  int64_t b = p.b, t = p.t;
  std::vector<int32_t> tok = RandomIds(b * t, 40);
  for (int32_t& x : tok) x += 2;
  if (p.doc_min == 0) {
    for (int64_t i = 0; i < b * t; i += 37) tok[i] = 1;
    tok[t / 2] = 1;
    return tok;
  }
  std::mt19937 rng(testing::FreshSeed());
  std::uniform_int_distribution<int64_t> len(p.doc_min, p.doc_max);
  for (int64_t i = len(rng) / 2; i < b * t; i += len(rng)) tok[i] = 1;
  return tok;
}

TEST_P(CudaAttention, ForwardAndBackwardMatchCpu) {
  const AttentionCase& p = GetParam();
  int64_t b = p.b, t = p.t, nh = 2, hd = p.hd, n = b * t * nh * hd;
  float scale = 0.12f;
  std::vector<int32_t> tokens = Tokens(p), lo(b * t);
  cpu::attention_key_start(lo.data(), tokens.data(), t, b, t, p.mask);
  std::vector<float> q = RoundBf16(Random(n, -2.f, 2.f)), k = RoundBf16(Random(n, -2.f, 2.f)),
                     v = RoundBf16(Random(n)), dout = RoundBf16(Random(n));
  DeviceTensor<bf16> d_q(ctx(), q), d_k(ctx(), k), d_v(ctx(), v), d_out(ctx(), n),
      d_dout(ctx(), dout);
  DeviceTensor<float> d_lse(ctx(), b * nh * t), d_dq(ctx(), n), d_dk(ctx(), n), d_dv(ctx(), n),
      d_rows(ctx(), b * nh * t);
  DeviceTensor<int32_t> d_lo(ctx(), lo);
  for (auto* x : {&d_lse, &d_dq, &d_dk, &d_dv}) x->Poison();
  d_out.Poison();
  ABLATE_EXPECT_OP(ctx(),
                   cuda::attention_forward(ctx(), d_out.get(), d_lse.get(), d_q.get(), d_k.get(),
                                           d_v.get(), d_lo.get(), b, t, nh, hd, scale, p.impl));
  std::vector<float> out(n), lse(b * nh * t);
  cpu::attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), lo.data(), b, t, nh,
                         hd, scale);
  EXPECT_LT(RelError(d_out.Get(), out), 1e-2);
  EXPECT_LT(testing::MaxAbsError(d_lse.Get(), lse), 1e-3);

  // The backward reads the GPU's own (bf16) output, as the model does; the CPU gets the same.
  std::vector<float> gpu_out = d_out.Get();
  ABLATE_EXPECT_OP(
      ctx(), cuda::attention_backward(ctx(), d_dq.get(), d_dk.get(), d_dv.get(), d_dout.get(),
                                      d_q.get(), d_k.get(), d_v.get(), d_out.get(), d_lse.get(),
                                      d_lo.get(), d_rows.get(), b, t, nh, hd, scale, p.impl));
  std::vector<float> dq(n, 0.f), dk(n, 0.f), dv(n, 0.f);
  cpu::attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(),
                          v.data(), gpu_out.data(), lse.data(), lo.data(), b, t, nh, hd, scale);
  EXPECT_LT(RelError(d_dq.Get(), dq), 2e-2);
  EXPECT_LT(RelError(d_dk.Get(), dk), 2e-2);
  EXPECT_LT(RelError(d_dv.Get(), dv), 2e-2);
}

cpu::AttentionMask Causal() { return {}; }
cpu::AttentionMask Docs() { return {true, 1, 0, 1}; }
cpu::AttentionMask Window(int64_t blocks, int64_t block_tokens) {
  return {false, 1, blocks, block_tokens};
}
cpu::AttentionMask DocsAndWindow() { return {true, 1, 3, 16}; }
// r20's masks at full-size shapes: 128-token blocks, long windows of up to 14 blocks (1,792
// tokens) and short ones of half that, with documents of FineWeb-like lengths.
cpu::AttentionMask DocsAndBlocks(int64_t blocks) { return {true, 1, blocks, 128}; }

INSTANTIATE_TEST_SUITE_P(
    Masks, CudaAttention,
    ::testing::Values(
        AttentionCase{"tiled128_causal", 128, AttentionImpl::kTiled, Causal()},
        AttentionCase{"tiled128_docs", 128, AttentionImpl::kTiled, Docs()},
        AttentionCase{"tiled128_window", 128, AttentionImpl::kTiled, Window(2, 48)},
        AttentionCase{"tiled128_diagonal_block", 128, AttentionImpl::kTiled, Window(1, 64)},
        AttentionCase{"tiled128_docs_window", 128, AttentionImpl::kTiled, DocsAndWindow()},
        AttentionCase{"tiled128_long", 128, AttentionImpl::kTiled, DocsAndWindow(), 1000},
        AttentionCase{"tiled64_causal", 64, AttentionImpl::kTiled, Causal()},
        AttentionCase{"tiled64_docs_window", 64, AttentionImpl::kTiled, DocsAndWindow()},
        AttentionCase{"tiled64_short", 64, AttentionImpl::kTiled, Causal(), 10},
        AttentionCase{"mma128_causal", 128, AttentionImpl::kMma, Causal()},
        AttentionCase{"mma128_docs", 128, AttentionImpl::kMma, Docs()},
        AttentionCase{"mma128_window", 128, AttentionImpl::kMma, Window(2, 48)},
        AttentionCase{"mma128_diagonal_block", 128, AttentionImpl::kMma, Window(1, 64)},
        AttentionCase{"mma128_docs_window", 128, AttentionImpl::kMma, DocsAndWindow()},
        AttentionCase{"mma128_long", 128, AttentionImpl::kMma, DocsAndWindow(), 1000},
        AttentionCase{"mma64_causal", 64, AttentionImpl::kMma, Causal()},
        AttentionCase{"mma64_docs_window", 64, AttentionImpl::kMma, DocsAndWindow()},
        AttentionCase{"mma64_short", 64, AttentionImpl::kMma, Causal(), 10},
        AttentionCase{"warp32_causal", 32, AttentionImpl::kWarp, Causal()},
        AttentionCase{"warp32_docs_window", 32, AttentionImpl::kWarp, DocsAndWindow()},
        AttentionCase{"warp8_window", 8, AttentionImpl::kWarp, Window(2, 4)},
        AttentionCase{"warp128_docs", 128, AttentionImpl::kWarp, Docs()},
        AttentionCase{"auto96_causal", 96, AttentionImpl::kAuto, Causal()},
        // Mid-size: many 64-row tiles per sequence, windows many tiles wide, documents both
        // shorter and longer than the window, so the window and the document mask each limit
        // some queries. T of 4-8K, head_dim 128, one sequence.
        AttentionCase{"mid8192_docs_long_window", 128, AttentionImpl::kTiled, DocsAndBlocks(14),
                      8192, 1, 200, 2500},
        AttentionCase{"mid8192_docs_short_window", 128, AttentionImpl::kTiled, DocsAndBlocks(7),
                      8192, 1, 200, 2500},
        AttentionCase{"mid4096_short_docs_wide_window", 128, AttentionImpl::kTiled,
                      DocsAndBlocks(14), 4096, 1, 60, 700},
        AttentionCase{"mid6000_window_no_docs", 128, AttentionImpl::kTiled, Window(3, 128), 6000,
                      1},
        AttentionCase{"mid5000_docs_causal", 128, AttentionImpl::kTiled, Docs(), 5000, 1, 300,
                      3000},
        AttentionCase{"mid8192_docs_long_window_mma", 128, AttentionImpl::kMma, DocsAndBlocks(14),
                      8192, 1, 200, 2500},
        AttentionCase{"mid8192_docs_short_window_mma", 128, AttentionImpl::kMma, DocsAndBlocks(7),
                      8192, 1, 200, 2500},
        AttentionCase{"mid4096_short_docs_wide_window_mma", 128, AttentionImpl::kMma,
                      DocsAndBlocks(14), 4096, 1, 60, 700},
        AttentionCase{"mid6000_window_no_docs_mma", 128, AttentionImpl::kMma, Window(3, 128), 6000,
                      1},
        AttentionCase{"mid5000_docs_causal_mma", 128, AttentionImpl::kMma, Docs(), 5000, 1, 300,
                      3000}),
    [](const ::testing::TestParamInfo<AttentionCase>& info) { return info.param.name; });

class CudaAttentionChoice : public testing::CudaTest {};

// kTiled refuses what the tiles do not cover, with a reason.
TEST_F(CudaAttentionChoice, TiledRefusesOtherHeadDims) {
  int64_t b = 1, t = 8, nh = 1, hd = 32, n = b * t * nh * hd;
  DeviceTensor<bf16> x(ctx(), RoundBf16(Random(n))), out(ctx(), n);
  DeviceTensor<float> lse(ctx(), t);
  std::vector<int32_t> lo(t, 0);
  DeviceTensor<int32_t> d_lo(ctx(), lo);
  Status s = cuda::attention_forward(ctx(), out.get(), lse.get(), x.get(), x.get(), x.get(),
                                     d_lo.get(), b, t, nh, hd, 0.1f, AttentionImpl::kTiled);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("head_dim 64 or 128"), std::string::npos) << s.message();
}

// So does kMma, forward and backward, naming itself.
TEST_F(CudaAttentionChoice, MmaRefusesOtherHeadDims) {
  int64_t b = 1, t = 8, nh = 1, hd = 96, n = b * t * nh * hd;
  DeviceTensor<bf16> x(ctx(), RoundBf16(Random(n))), out(ctx(), n);
  DeviceTensor<float> lse(ctx(), t), dq(ctx(), n), dk(ctx(), n), dv(ctx(), n), rows(ctx(), t);
  std::vector<int32_t> lo(t, 0);
  DeviceTensor<int32_t> d_lo(ctx(), lo);
  Status s = cuda::attention_forward(ctx(), out.get(), lse.get(), x.get(), x.get(), x.get(),
                                     d_lo.get(), b, t, nh, hd, 0.1f, AttentionImpl::kMma);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mma"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("head_dim 64 or 128"), std::string::npos) << s.message();
  s = cuda::attention_backward(ctx(), dq.get(), dk.get(), dv.get(), x.get(), x.get(), x.get(),
                               x.get(), out.get(), lse.get(), d_lo.get(), rows.get(), b, t, nh, hd,
                               0.1f, AttentionImpl::kMma);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mma"), std::string::npos) << s.message();
}

// kMma against kTiled on one mid-size input (r20's masks: documents, a window of 14 blocks of
// 128 tokens): both forwards on the same q, k, v; both backwards from kTiled's out and lse, so
// the gradients compare the backward kernels alone.
//
// Tolerances, from bf16 rounding: both kernel sets walk the same key tiles in the same order,
// compute scores, softmax statistics and accumulators in fp32, and round the same quantities to
// bf16 (P and dS before their second products, out when stored). Their fp32 values differ only
// by summation order (~1e-6 relative), so a bf16 rounding comes out differently only where a
// value sits on a rounding boundary, and then by one ulp: at most 2^-7 relative. Even if every
// rounded element moved by that much, out and the gradients would move by about 2^-7 ≈ 7.8e-3
// relative in norm: bound 8e-3 (the CPU twin's 1e-2 and 2e-2 would let two kernels be off by
// up to twice those, in opposite directions). Elementwise, out may differ by a ulp or two of
// its largest value (flipped P roundings can nudge a row's fp32 sum across the next rounding):
// bound 2^-6 of max |out|. lse stays fp32 throughout: a few fp32 ulps of |lse| < 64 (ulp ≤
// 7.6e-6): bound 1e-4. A wrong mask or a skipped tile moves whole rows by O(1) and fails these.
TEST_F(CudaAttentionChoice, MmaMatchesTiled) {
  AttentionCase p{"mid4096", 128, AttentionImpl::kMma, DocsAndBlocks(14), 4096, 1, 200, 2500};
  int64_t b = p.b, t = p.t, nh = 2, hd = p.hd, n = b * t * nh * hd;
  float scale = 0.12f;
  std::vector<int32_t> tokens = Tokens(p), lo(b * t);
  cpu::attention_key_start(lo.data(), tokens.data(), t, b, t, p.mask);
  DeviceTensor<bf16> q(ctx(), RoundBf16(Random(n, -2.f, 2.f))),
      k(ctx(), RoundBf16(Random(n, -2.f, 2.f))), v(ctx(), RoundBf16(Random(n))),
      dout(ctx(), RoundBf16(Random(n)));
  DeviceTensor<int32_t> d_lo(ctx(), lo);
  struct Outputs {
    DeviceTensor<bf16> out;
    DeviceTensor<float> lse, dq, dk, dv;
  };
  auto make = [&] {
    return Outputs{DeviceTensor<bf16>(ctx(), n), DeviceTensor<float>(ctx(), b * nh * t),
                   DeviceTensor<float>(ctx(), n), DeviceTensor<float>(ctx(), n),
                   DeviceTensor<float>(ctx(), n)};
  };
  Outputs tiled = make(), mma = make();
  DeviceTensor<float> rows(ctx(), b * nh * t);
  for (Outputs* o : {&tiled, &mma}) {
    for (auto* x : {&o->lse, &o->dq, &o->dk, &o->dv}) x->Poison();
    o->out.Poison();
  }
  for (AttentionImpl impl : {AttentionImpl::kTiled, AttentionImpl::kMma}) {
    Outputs& o = impl == AttentionImpl::kTiled ? tiled : mma;
    ABLATE_EXPECT_OP(
        ctx(), cuda::attention_forward(ctx(), o.out.get(), o.lse.get(), q.get(), k.get(), v.get(),
                                       d_lo.get(), b, t, nh, hd, scale, impl));
    ABLATE_EXPECT_OP(
        ctx(), cuda::attention_backward(ctx(), o.dq.get(), o.dk.get(), o.dv.get(), dout.get(),
                                        q.get(), k.get(), v.get(), tiled.out.get(), tiled.lse.get(),
                                        d_lo.get(), rows.get(), b, t, nh, hd, scale, impl));
  }
  std::vector<float> want_out = tiled.out.Get(), got_out = mma.out.Get();
  double max_out = 0;
  for (float x : want_out) max_out = std::max(max_out, double(std::abs(x)));
  EXPECT_LT(RelError(got_out, want_out), 8e-3);
  EXPECT_LE(testing::MaxAbsError(got_out, want_out), max_out / 64) << "max |out| " << max_out;
  EXPECT_LT(testing::MaxAbsError(mma.lse.Get(), tiled.lse.Get()), 1e-4);
  EXPECT_LT(RelError(mma.dq.Get(), tiled.dq.Get()), 8e-3);
  EXPECT_LT(RelError(mma.dk.Get(), tiled.dk.Get()), 8e-3);
  EXPECT_LT(RelError(mma.dv.Get(), tiled.dv.Get()), 8e-3);
}

}  // namespace
}  // namespace ablate
