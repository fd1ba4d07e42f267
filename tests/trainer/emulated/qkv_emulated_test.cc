// The fused q/k/v kernels (trainer/cuda/qkv_kernels.cuh), run on the CPU emulator of their
// primitives (gpu_emulator.h), against the chain of CPU twins they replace (trainer/cpu:
// rmsnorm, rope, residual mix), rounded to bf16 where the GPU's chain of single passes stores
// bf16: the split, qk-norm, RoPE (full and half-truncated) and every value mix forward; RoPE's
// transpose, the qk-norm backward and the merge backward. Head dims that are and are not
// multiples of 32 (RoPE's pairs then sit in other lanes), a last block with idle warps, and both
// of the emulator's schedules (a lane that runs ahead to the barrier reads stale shared memory
// if one is missing). The GPU test (tests/trainer/cuda_ops_test.cc) compares the same kernels
// against the single passes bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/trainer/emulated/gpu_emulator.h"
#include "trainer/cpu/rmsnorm.h"
#include "trainer/cpu/rope.h"
#include "trainer/cuda/qkv_kernels.cuh"

namespace ablate {
namespace {

namespace qk = cuda::qkv_kernels;
using cuda::MixWeight;
using cuda::QkvBackwardArgs;
using cuda::QkvForwardArgs;
using cuda::ValueMixKind;
using emulated::EmulatedPrimitives;
using emulated::Launch;
using bf16 = __nv_bfloat16;

float QkvRound(float v) { return __bfloat162float(__float2bfloat16(v)); }

std::vector<float> RandomRounded(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = QkvRound(u(rng));
  return v;
}

std::vector<bf16> QkvToBf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(v[i]);
  return out;
}

std::vector<float> QkvToFloat(const std::vector<bf16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}

// Every element within one bf16 step of the reference's scale (values are O(1) here): what a
// differently ordered fp32 sum can move after rounding. A misplaced element or pair is off by
// O(1); an element the kernel never wrote is NaN.
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    float tol = std::ldexp(std::max(std::fabs(want[i]), 1.f), -7);
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

struct QkvCase {
  std::string name;
  int64_t nh, hd;
  bool qk_norm;
  ValueMixKind mix;
  bool first_layer;  // kResidual: v1 is this layer's own v_raw
  bool ve_table;     // kEmbed: the layer has a table
  cpu::RopeKind rope;
};

using QkvParam = std::tuple<QkvCase, emulated::Schedule>;
class QkvEmulated : public ::testing::TestWithParam<QkvParam> {};

TEST_P(QkvEmulated, ForwardAndBackwardMatchTheCpuChain) {
  const QkvCase& c = std::get<0>(GetParam());
  emulated::EmulationMode mode;
  mode.schedule = std::get<1>(GetParam());
  // 2 sequences of 13: N·NH is not a multiple of the block's warps.
  const int64_t b = 2, t = 13, n = b * t, nh = c.nh, hd = c.hd, ch = nh * hd, vocab = 7;
  std::random_device seed_source;
  uint32_t seed = seed_source();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const size_t nc = size_t(n * ch);

  std::vector<float> qkv = RandomRounded(size_t(3 * n * ch), -2.f, 2.f, rng);
  std::vector<float> v1 = RandomRounded(nc, -2.f, 2.f, rng);
  std::vector<float> table = RandomRounded(size_t(vocab * ch), -1.f, 1.f, rng);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = int32_t(rng() % vocab);
  std::vector<float> lambdas = {0.7f, 0.45f};
  cpu::RopeTable<float> rope = cpu::rope_table<float>(t, hd, c.rope, 10000.0);

  const bf16 nan = __float2bfloat16(NAN);
  std::vector<bf16> qkv16 = QkvToBf16(qkv), v116 = QkvToBf16(v1);
  std::vector<bf16> q_raw(nc, nan), k_raw(nc, nan), v_raw(nc, nan), q(nc, nan), k(nc, nan),
      v(nc, nan);
  std::vector<float> q_rstd(size_t(n * nh), NAN), k_rstd(size_t(n * nh), NAN);
  QkvForwardArgs a;
  a.qkv = qkv16.data();
  a.v_raw = v_raw.data();
  a.q = q.data();
  a.k = k.data();
  a.v = c.mix == ValueMixKind::kNone ? v_raw.data() : v.data();
  if (c.qk_norm) {
    a.q_raw = q_raw.data();
    a.k_raw = k_raw.data();
    a.q_rstd = q_rstd.data();
    a.k_rstd = k_rstd.data();
  }
  a.rope_cos = rope.cos.data();
  a.rope_sin = rope.sin.data();
  a.n = n;
  a.t = t;
  a.nh = nh;
  a.hd = hd;
  a.qk_norm = c.qk_norm;
  a.mix = c.mix;
  if (c.mix == ValueMixKind::kResidual) {
    a.a = MixWeight::OneMinus(&lambdas[0]);
    a.b = MixWeight::Param(&lambdas[0]);
    a.v1 = c.first_layer ? v_raw.data() : v116.data();
  } else if (c.mix == ValueMixKind::kEmbed) {
    a.a = MixWeight::Param(&lambdas[0]);
    a.b = MixWeight::Param(&lambdas[1]);
    if (c.ve_table) {
      a.ve_table = table.data();
      a.ids = ids.data();
    }
  }
  dim3 grid(unsigned((n * nh + qk::kWarps - 1) / qk::kWarps), 1, 1);
  std::string error = Launch(
      grid, qk::kThreads, qk::SmemBytes(hd), [&] { qk::QkvForwardKernel<EmulatedPrimitives>(a); },
      mode);
  ASSERT_EQ(error, "") << "forward";

  // The CPU chain: split, norm per head (rounded to bf16 as the GPU stores it), RoPE (rounded).
  std::vector<float> want_q(nc), want_k(nc), want_v(nc), want_vraw(nc);
  std::vector<float> want_qraw(nc), want_kraw(nc);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < ch; ++j) {
      want_qraw[size_t(r * ch + j)] = qkv[size_t(r * 3 * ch + j)];
      want_kraw[size_t(r * ch + j)] = qkv[size_t(r * 3 * ch + ch + j)];
      want_vraw[size_t(r * ch + j)] = qkv[size_t(r * 3 * ch + 2 * ch + j)];
    }
  }
  std::vector<float> want_qrstd(size_t(n * nh)), want_krstd(size_t(n * nh));
  auto prepare = [&](const std::vector<float>& raw, std::vector<float>& rstd,
                     std::vector<float>& out) {
    std::vector<float> normed = raw;
    if (c.qk_norm) {
      cpu::rmsnorm_forward(normed.data(), rstd.data(), raw.data(), n * nh, hd);
      for (float& x : normed) x = QkvRound(x);
    }
    cpu::rope_forward(out.data(), normed.data(), rope, b, t, nh, hd);
    for (float& x : out) x = QkvRound(x);
  };
  prepare(want_qraw, want_qrstd, want_q);
  prepare(want_kraw, want_krstd, want_k);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < ch; ++j) {
      size_t i = size_t(r * ch + j);
      float x = want_vraw[i];
      if (c.mix == ValueMixKind::kResidual) {
        float y = c.first_layer ? x : v1[i];
        want_v[i] = QkvRound((1.f - lambdas[0]) * x + lambdas[0] * y);
      } else if (c.mix == ValueMixKind::kEmbed) {
        float y = c.ve_table ? table[size_t(ids[size_t(r)] * ch + j)] : 0.f;
        want_v[i] = QkvRound(lambdas[0] * x + lambdas[1] * y);
      } else {
        want_v[i] = x;
      }
    }
  }
  EXPECT_EQ(QkvToFloat(v_raw), want_vraw);  // copies: exact
  if (c.qk_norm) {
    EXPECT_EQ(QkvToFloat(q_raw), want_qraw);
    EXPECT_EQ(QkvToFloat(k_raw), want_kraw);
    for (size_t i = 0; i < q_rstd.size(); ++i) {
      ASSERT_NEAR(q_rstd[i], want_qrstd[i], 1e-5f * want_qrstd[i]) << i;
      ASSERT_NEAR(k_rstd[i], want_krstd[i], 1e-5f * want_krstd[i]) << i;
    }
  } else {
    EXPECT_TRUE(std::all_of(q_raw.begin(), q_raw.end(), [](bf16 x) {
      return std::isnan(__bfloat162float(x));
    })) << "q_raw is written only with qk_norm";
  }
  ExpectClose(QkvToFloat(q), want_q, "q");
  ExpectClose(QkvToFloat(k), want_k, "k");
  if (c.mix != ValueMixKind::kNone) ExpectClose(QkvToFloat(v), want_v, "v");

  // Backward from random gradients of the roped q, k and of v_raw.
  std::vector<float> dq = RandomRounded(nc, -1.f, 1.f, rng), dk = RandomRounded(nc, -1.f, 1.f, rng),
                     dv = RandomRounded(nc, -1.f, 1.f, rng);
  std::vector<bf16> dqkv(size_t(3 * n * ch), nan);
  QkvBackwardArgs g;
  g.dqkv = dqkv.data();
  g.dq = dq.data();
  g.dk = dk.data();
  g.dv = dv.data();
  if (c.qk_norm) {
    g.q_raw = q_raw.data();
    g.k_raw = k_raw.data();
    g.q_rstd = q_rstd.data();
    g.k_rstd = k_rstd.data();
  }
  g.rope_cos = rope.cos.data();
  g.rope_sin = rope.sin.data();
  g.n = n;
  g.t = t;
  g.nh = nh;
  g.hd = hd;
  g.qk_norm = c.qk_norm;
  error = Launch(
      grid, qk::kThreads, qk::SmemBytes(hd), [&] { qk::QkvBackwardKernel<EmulatedPrimitives>(g); },
      mode);
  ASSERT_EQ(error, "") << "backward";

  auto back = [&](const std::vector<float>& grad, const std::vector<float>& raw,
                  const std::vector<float>& rstd) {
    std::vector<float> pre(nc), out(nc);
    cpu::rope_backward(pre.data(), grad.data(), rope, b, t, nh, hd);
    if (!c.qk_norm) return pre;
    cpu::rmsnorm_backward(out.data(), pre.data(), raw.data(), rstd.data(), n * nh, hd,
                          cpu::Output::kOverwrite);
    return out;
  };
  std::vector<float> want_dq = back(dq, want_qraw, want_qrstd);
  std::vector<float> want_dk = back(dk, want_kraw, want_krstd);
  std::vector<float> got = QkvToFloat(dqkv), got_dq(nc), got_dk(nc), got_dv(nc), want_dv(nc);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < ch; ++j) {
      size_t i = size_t(r * ch + j);
      got_dq[i] = got[size_t(r * 3 * ch + j)];
      got_dk[i] = got[size_t(r * 3 * ch + ch + j)];
      got_dv[i] = got[size_t(r * 3 * ch + 2 * ch + j)];
      want_dq[i] = QkvRound(want_dq[i]);
      want_dk[i] = QkvRound(want_dk[i]);
      want_dv[i] = QkvRound(dv[i]);
    }
  }
  ExpectClose(got_dq, want_dq, "dq");
  ExpectClose(got_dk, want_dk, "dk");
  EXPECT_EQ(got_dv, want_dv);  // a rounding copy: exact
}

const cpu::RopeKind kFull = cpu::RopeKind::kFull;
const cpu::RopeKind kHalf = cpu::RopeKind::kHalfTruncated;

INSTANTIATE_TEST_SUITE_P(
    Configs, QkvEmulated,
    ::testing::Combine(
        ::testing::Values(
            // r20's head: 128 wide, qk-norm, half-truncated RoPE, value embeddings from a table.
            QkvCase{"hd128_norm_ve_table", 3, 128, true, ValueMixKind::kEmbed, false, true, kHalf},
            QkvCase{"hd128_norm_plain", 2, 128, true, ValueMixKind::kNone, false, false, kFull},
            // A value-embedding layer without a table: v = λ0·v_raw.
            QkvCase{"hd64_norm_ve_no_table", 3, 64, true, ValueMixKind::kEmbed, false, false,
                    kHalf},
            QkvCase{"hd64_value_residual", 3, 64, true, ValueMixKind::kResidual, false, false,
                    kFull},
            QkvCase{"hd64_value_residual_first", 3, 64, true, ValueMixKind::kResidual, true, false,
                    kFull},
            // No qk-norm (r1-like): RoPE on the raw product; q_raw and k_raw are not written.
            QkvCase{"hd128_no_norm", 2, 128, false, ValueMixKind::kNone, false, false, kFull},
            // Pairs (j, j + HD/2) in other lanes (HD/2 not a multiple of 32), and tiny heads.
            QkvCase{"hd96_norm", 2, 96, true, ValueMixKind::kNone, false, false, kFull},
            QkvCase{"hd8_norm_ve_table", 4, 8, true, ValueMixKind::kEmbed, false, true, kHalf},
            QkvCase{"hd6_no_norm", 5, 6, false, ValueMixKind::kResidual, false, false, kFull}),
        ::testing::Values(emulated::Schedule::kRoundRobin, emulated::Schedule::kLowestFirst)),
    [](const ::testing::TestParamInfo<QkvParam>& info) {
      bool ahead = std::get<1>(info.param) == emulated::Schedule::kLowestFirst;
      return std::get<0>(info.param).name + (ahead ? "_run_ahead" : "_round_robin");
    });

}  // namespace
}  // namespace ablate
