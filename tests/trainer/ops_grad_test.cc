// Every CPU op's backward against central finite differences, in double precision, on random
// non-zero inputs. f = Σ w ⊙ op(x) with random w, so dout = w.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/trainer/grad_check.h"
#include "trainer/cpu/attention.h"
#include "trainer/cpu/embedding.h"
#include "trainer/cpu/fast_exp.h"
#include "trainer/cpu/matmul.h"
#include "trainer/cpu/mlp_act.h"
#include "trainer/cpu/residual.h"
#include "trainer/cpu/rmsnorm.h"
#include "trainer/cpu/rope.h"
#include "trainer/cpu/softcap_cross_entropy.h"

namespace ablate::cpu {
namespace {

using testing::Dot;
using testing::MaxRelError;
using testing::RandomVec;
using Vec = std::vector<double>;
constexpr double kTol = 1e-5;

// The softmax's exp: close to std::exp over the clamped range, and defined for every input
// (a diverged run's NaN must come out as NaN, not as undefined behaviour in the int conversion:
// the sanitizer build's UBSan found that one).
TEST(FastExpTest, CloseToExpAndNanInNanOut) {
  for (float x : {-80.0f, -10.0f, -1.0f, -0.3f, 0.0f, 0.5f, 1.0f, 7.0f, 40.0f, 80.0f}) {
    EXPECT_NEAR(FastExp(x), std::exp(x), 4e-7f * std::exp(x)) << x;
  }
  EXPECT_TRUE(std::isnan(FastExp(std::nanf(""))));
  EXPECT_GT(FastExp(1e30f), 0.0f);
  EXPECT_GE(FastExp(-1e30f), 0.0f);
  EXPECT_LT(FastExp(-1e30f), 1e-37f);
}

TEST(OpsGrad, Matmul) {
  int64_t n = 6, c = 5, oc = 7;
  Vec x = RandomVec(n * c, 1), w = RandomVec(oc * c, 2), g = RandomVec(n * oc, 3);
  auto f = [&] {
    Vec y(n * oc);
    matmul_forward(y.data(), x.data(), w.data(), n, c, oc);
    return Dot(y, g);
  };
  Vec dx(n * c, 0), dw(oc * c, 0);
  matmul_backward(dx.data(), dw.data(), g.data(), x.data(), w.data(), n, c, oc);
  EXPECT_LT(MaxRelError(x, f, dx), kTol);
  EXPECT_LT(MaxRelError(w, f, dw), kTol);
}

TEST(OpsGrad, RmsNorm) {
  int64_t n = 4, c = 9;
  Vec x = RandomVec(n * c, 4), g = RandomVec(n * c, 5);
  auto f = [&] {
    Vec y(n * c), r(n);
    rmsnorm_forward(y.data(), r.data(), x.data(), n, c);
    return Dot(y, g);
  };
  Vec y(n * c), r(n), dx(n * c, 0);
  rmsnorm_forward(y.data(), r.data(), x.data(), n, c);
  rmsnorm_backward(dx.data(), g.data(), x.data(), r.data(), n, c);
  EXPECT_LT(MaxRelError(x, f, dx), kTol);
}

class RopeGrad : public ::testing::TestWithParam<RopeKind> {};

TEST_P(RopeGrad, MatchesFiniteDifferences) {
  int64_t b = 2, t = 5, nh = 2, hd = 8;
  RopeTable<double> table = rope_table<double>(t, hd, GetParam(), 100.0);
  Vec x = RandomVec(b * t * nh * hd, 6), g = RandomVec(b * t * nh * hd, 7);
  auto f = [&] {
    Vec y(x.size());
    rope_forward(y.data(), x.data(), table, b, t, nh, hd);
    return Dot(y, g);
  };
  Vec dx(x.size());
  rope_backward(dx.data(), g.data(), table, b, t, nh, hd);
  EXPECT_LT(MaxRelError(x, f, dx), kTol);
}

INSTANTIATE_TEST_SUITE_P(Kinds, RopeGrad,
                         ::testing::Values(RopeKind::kFull, RopeKind::kHalfTruncated));

TEST(OpsGrad, RopeHalfTruncatedPassesUpperQuarterThrough) {
  int64_t t = 4, hd = 16;
  RopeTable<double> table = rope_table<double>(t, hd, RopeKind::kHalfTruncated, 10000);
  for (int64_t p = 0; p < t; ++p) {
    for (int64_t j = hd / 4; j < hd / 2; ++j) {
      EXPECT_EQ(table.cos[p * hd / 2 + j], 1.0);
      EXPECT_EQ(table.sin[p * hd / 2 + j], 0.0);
    }
  }
  // θ_0 = 1, θ_{h/4−1} = 1/1024.
  EXPECT_NEAR(table.sin[1 * hd / 2 + 0], std::sin(1.0), 1e-12);
  EXPECT_NEAR(table.sin[1 * hd / 2 + hd / 4 - 1], std::sin(1.0 / 1024), 1e-12);
}

class MlpActGrad : public ::testing::TestWithParam<MlpAct> {};

TEST_P(MlpActGrad, MatchesFiniteDifferences) {
  int64_t n = 50;
  Vec x = RandomVec(n, 8, -2, 2), g = RandomVec(n, 9);
  auto f = [&] {
    Vec y(n);
    mlp_act_forward(y.data(), x.data(), n, GetParam());
    return Dot(y, g);
  };
  Vec dx(n, 0);
  mlp_act_backward(dx.data(), g.data(), x.data(), n, GetParam());
  EXPECT_LT(MaxRelError(x, f, dx), kTol);
}

INSTANTIATE_TEST_SUITE_P(Kinds, MlpActGrad, ::testing::Values(MlpAct::kRelu2, MlpAct::kGelu));

TEST(OpsGrad, Embedding) {
  int64_t v = 5, c = 3, n = 7;
  std::vector<int32_t> idx = {0, 3, 3, 1, 4, 0, 3};
  Vec table = RandomVec(v * c, 10), g = RandomVec(n * c, 11);
  auto f = [&] {
    Vec y(n * c);
    embedding_forward(y.data(), table.data(), idx.data(), n, c);
    return Dot(y, g);
  };
  Vec dt(v * c, 0);
  embedding_backward(dt.data(), g.data(), idx.data(), n, c);
  EXPECT_LT(MaxRelError(table, f, dt), kTol);
}

TEST(OpsGrad, ResidualMix) {
  int64_t n = 20;
  Vec x = RandomVec(n, 12), y = RandomVec(n, 13), g = RandomVec(n, 14), ab = {0.7, -1.3};
  auto f = [&] {
    Vec out(n);
    residual_mix_forward(out.data(), x.data(), ab[0], y.data(), ab[1], n);
    return Dot(out, g);
  };
  Vec dx(n, 0), dy(n, 0), dab(2, 0);
  MixGrads<double> grads{dx.data(), dy.data(), &dab[0], &dab[1]};
  residual_mix_backward(grads, g.data(), x.data(), ab[0], y.data(), ab[1], n);
  EXPECT_LT(MaxRelError(x, f, dx), kTol);
  EXPECT_LT(MaxRelError(y, f, dy), kTol);
  EXPECT_LT(MaxRelError(ab, f, dab), kTol);
}

// activation_dtype bf16: the weight is rounded to bf16 before it multiplies (as PyTorch casts a
// 0-dim fp32 tensor to a bf16 tensor's dtype), then the product and the sum; the backward's
// input gradients use the rounded weight (straight through the roundings).
TEST(OpsGrad, ResidualMixBf16RoundsAsBf16Tensors) {
  float a = 1.f + std::ldexp(1.f, -9), b = 0.5f;  // bf16(a) = 1 (a tie, to even)
  std::vector<float> x = {1.f, 3.f}, y = {std::ldexp(1.f, -8), 1.f + std::ldexp(1.f, -7)}, out(2);
  residual_mix_forward(out.data(), x.data(), a, y.data(), b, 2, Rounding::kBf16);
  EXPECT_EQ(out[0], 1.f);  // 1 + 2^-9 rounds back to 1 (tie to even)
  EXPECT_EQ(out[1], 3.5f);  // 3 + (0.5 + 2^-8) = 3.50390625 → 3.5
  std::vector<float> fp32(2);
  residual_mix_forward(fp32.data(), x.data(), a, y.data(), b, 2);
  EXPECT_NE(fp32[0], out[0]);
  EXPECT_EQ(mix_weight(a, Rounding::kBf16), 1.f);
  EXPECT_EQ(mix_weight(a, Rounding::kNone), a);
  std::vector<double> r = {1.0 + std::ldexp(1.0, -9), 1.0 + 3 * std::ldexp(1.0, -9)};
  round_to_bf16(r.data(), 2);
  EXPECT_EQ(r, (std::vector<double>{1.0, 1.0 + std::ldexp(1.0, -7)}));
}

class SoftcapGrad : public ::testing::TestWithParam<Softcap> {};

TEST_P(SoftcapGrad, MatchesFiniteDifferences) {
  int64_t n = 4, v = 11;
  std::vector<int32_t> targets = {3, 0, 10, 5};
  Vec z = RandomVec(n * v, 15, -4, 4);
  double dloss = 0.37;
  auto f = [&] {
    Vec logits = z, losses(n), lse(n);
    softcap_cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v,
                                  GetParam());
    double s = 0;
    for (double l : losses) s += l;
    return dloss * s;
  };
  Vec capped = z, losses(n), lse(n), dz(n * v);
  softcap_cross_entropy_forward(losses.data(), lse.data(), capped.data(), targets.data(), n, v,
                                GetParam());
  softcap_cross_entropy_backward(dz.data(), capped.data(), lse.data(), targets.data(), n, v,
                                 GetParam(), dloss);
  EXPECT_LT(MaxRelError(z, f, dz), kTol);
}

INSTANTIATE_TEST_SUITE_P(Kinds, SoftcapGrad,
                         ::testing::Values(Softcap{SoftcapKind::kNone, 0},
                                           Softcap{SoftcapKind::kTanh, 3.0},
                                           Softcap{SoftcapKind::kSigmoid, 5.0}));

TEST(OpsGrad, SoftcapSigmoidEqualsShiftedTanh) {
  // 30·σ(z/7.5) = 15·tanh(z/15) + 15 (record-presets.md, r19).
  std::vector<int32_t> target = {0};
  Vec a = {2.5}, b = {2.5}, la(1), lb(1), lse(1);
  softcap_cross_entropy_forward(la.data(), lse.data(), a.data(), target.data(), 1, 1,
                                Softcap{SoftcapKind::kSigmoid, 30});
  softcap_cross_entropy_forward(lb.data(), lse.data(), b.data(), target.data(), 1, 1,
                                Softcap{SoftcapKind::kTanh, 15});
  EXPECT_NEAR(a[0], b[0] + 15, 1e-12);
}

struct AttnCase {
  AttentionMask mask;
  const char* name;
};

class AttentionGrad : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionGrad, MatchesFiniteDifferences) {
  int64_t b = 2, t = 9, nh = 2, hd = 4, sz = b * t * nh * hd;
  std::vector<int32_t> tokens = {5, 1, 7, 9, 7, 2, 3, 7, 4, 0,   // stride t + 1
                                 7, 2, 2, 3, 1, 7, 7, 6, 5, 1};
  std::vector<int32_t> lo(b * t);
  attention_key_start(lo.data(), tokens.data(), t + 1, b, t, GetParam().mask);
  Vec q = RandomVec(sz, 16), k = RandomVec(sz, 17), v = RandomVec(sz, 18), g = RandomVec(sz, 19);
  double scale = 0.6;
  auto f = [&] {
    Vec out(sz), lse(b * nh * t);
    attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), lo.data(), b, t, nh,
                      hd, scale);
    return Dot(out, g);
  };
  Vec out(sz), lse(b * nh * t), dq(sz, 0), dk(sz, 0), dv(sz, 0);
  attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), lo.data(), b, t, nh, hd,
                    scale);
  attention_backward(dq.data(), dk.data(), dv.data(), g.data(), q.data(), k.data(), v.data(),
                     out.data(), lse.data(), lo.data(), b, t, nh, hd, scale);
  EXPECT_LT(MaxRelError(q, f, dq), kTol);
  EXPECT_LT(MaxRelError(k, f, dk), kTol);
  EXPECT_LT(MaxRelError(v, f, dv), kTol);
}

INSTANTIATE_TEST_SUITE_P(
    Masks, AttentionGrad,
    ::testing::Values(AttnCase{{false, 7, 0, 1}, "causal"},
                      AttnCase{{true, 7, 0, 1}, "doc"},
                      AttnCase{{false, 7, 2, 3}, "window"},
                      AttnCase{{true, 7, 1, 2}, "doc_window"}),
    [](const ::testing::TestParamInfo<AttnCase>& info) { return info.param.name; });

TEST(Attention, KeyStartFollowsMaskRules) {
  // Row 0 of the tokens above with BOS 7 and a 2-block window of 3 tokens.
  std::vector<int32_t> tokens = {5, 1, 7, 9, 7, 2, 3, 7, 4, 0};
  std::vector<int32_t> lo(9);
  attention_key_start(lo.data(), tokens.data(), 10, 1, 9, {true, 7, 0, 1});
  EXPECT_EQ(lo, (std::vector<int32_t>{0, 0, 2, 2, 4, 4, 4, 7, 7}));
  attention_key_start(lo.data(), tokens.data(), 10, 1, 9, {false, 7, 2, 3});
  // block(t) = t/3; first visible block = block(t) − 1.
  EXPECT_EQ(lo, (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 3, 3, 3}));
  attention_key_start(lo.data(), tokens.data(), 10, 1, 9, {false, 7, 1, 3});
  EXPECT_EQ(lo, (std::vector<int32_t>{0, 0, 0, 3, 3, 3, 6, 6, 6}));
}

}  // namespace
}  // namespace ablate::cpu
