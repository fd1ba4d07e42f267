// The mma attention kernels (trainer/cuda/attention_mma_kernels.cuh), run on the CPU emulator
// of their primitives (gpu_emulator.h), against the CPU twin (trainer/cpu/attention.h) with the
// tolerances of the GPU test (tests/trainer/cuda_attention_test.cc): every mask of MODEL.md,
// head_dim 64 and 128, sequence lengths that are not multiples of the 64-row tiles, tiles that
// take the unmasked path and tiles that do not. This is what can be checked without a GPU: the
// kernels' indexing, masks, online softmax, pipelining and barriers; the fragment layouts are
// the emulator's reading of the PTX ISA, which only a GPU run confirms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/trainer/emulated/gpu_emulator.h"
#include "trainer/cpu/attention.h"
#include "trainer/cuda/attention_mma_kernels.cuh"

namespace ablate {
namespace {

namespace mma = cuda::mma_attention;
using emulated::EmulatedPrimitives;
using emulated::Launch;
using P = EmulatedPrimitives;
using bf16 = __nv_bfloat16;

std::vector<float> Random(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = __bfloat162float(__float2bfloat16(u(rng)));  // exact in bf16
  return v;
}

std::vector<bf16> ToBf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(v[i]);
  return out;
}

std::vector<float> ToFloat(const std::vector<bf16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}

// ‖got − want‖ / ‖want‖; infinite when anything is not finite.
double RelError(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

double MaxAbsError(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  }
  return worst;
}

struct Case {
  std::string name;
  int64_t hd;
  cpu::AttentionMask mask;
  int64_t t;
  int64_t doc_every;  // a BOS every this many tokens (0: none but position 0)
};

// Each case twice: cp.async copies landing at once with warp 0 running ahead (a stage
// reloaded while another warp reads it shows), and copies landing as late as the waits allow
// with the warps in near lockstep (a stage read before its wait shows).
constexpr emulated::EmulationMode kRunAhead{emulated::CopyLanding::kAtIssue,
                                            emulated::Schedule::kLowestFirst};
constexpr emulated::EmulationMode kLateCopies{emulated::CopyLanding::kAtWait,
                                              emulated::Schedule::kRoundRobin};

class MmaAttentionEmulated
    : public ::testing::TestWithParam<std::tuple<Case, emulated::EmulationMode>> {};

// Runs the forward and backward kernels for head_dim HD on the emulator.
template <int HD>
void RunKernels(const Case& c, emulated::EmulationMode mode, int64_t b, int64_t nh, float scale,
                const std::vector<bf16>& q, const std::vector<bf16>& k, const std::vector<bf16>& v,
                const std::vector<bf16>& dout, const std::vector<int32_t>& lo,
                std::vector<bf16>& out, std::vector<float>& lse, std::vector<float>& dq,
                std::vector<float>& dk, std::vector<float>& dv) {
  int64_t t = c.t;
  dim3 grid(unsigned((t + mma::kRows - 1) / mma::kRows), unsigned(nh), unsigned(b));
  float scale2 = scale * mma::kLog2e;
  std::string error = Launch(
      grid, mma::kThreads, mma::kForwardBytes<HD>,
      [&] {
        mma::MmaForwardKernel<HD, P>(out.data(), lse.data(), q.data(), k.data(), v.data(),
                                     lo.data(), t, nh, scale2);
      },
      mode);
  ASSERT_EQ(error, "") << "forward";
  // d = rowsum(dout ⊙ out) (B, NH, T), as attention.cu's RowDotKernel computes it.
  std::vector<float> d(size_t(b * nh * t));
  for (int64_t row = 0; row < b * t * nh; ++row) {
    float s = 0.f;
    for (int64_t j = 0; j < HD; ++j) {
      s += __bfloat162float(dout[size_t(row * HD + j)]) *
           __bfloat162float(out[size_t(row * HD + j)]);
    }
    int64_t hi = row % nh, bt = row / nh;
    d[size_t(((bt / t) * nh + hi) * t + bt % t)] = s;
  }
  error = Launch(
      grid, mma::kThreads, mma::kDkvBytes<HD>,
      [&] {
        mma::MmaBackwardDkvKernel<HD, P>(dk.data(), dv.data(), dout.data(), q.data(), k.data(),
                                         v.data(), lse.data(), d.data(), lo.data(), t, nh, scale,
                                         scale2);
      },
      mode);
  ASSERT_EQ(error, "") << "dk/dv";
  error = Launch(
      grid, mma::kThreads, mma::kDqBytes<HD>,
      [&] {
        mma::MmaBackwardDqKernel<HD, P>(dq.data(), dout.data(), q.data(), k.data(), v.data(),
                                        lse.data(), d.data(), lo.data(), t, nh, scale, scale2);
      },
      mode);
  ASSERT_EQ(error, "") << "dq";
}

TEST_P(MmaAttentionEmulated, ForwardAndBackwardMatchCpu) {
  const Case& c = std::get<0>(GetParam());
  const emulated::EmulationMode mode = std::get<1>(GetParam());
  const int64_t b = 2, nh = 2, t = c.t, hd = c.hd, n = b * t * nh * hd;
  const float scale = 0.12f;
  std::random_device seed_source;
  uint32_t seed = seed_source();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens(size_t(b * t), 5), lo(size_t(b * t));
  for (int64_t i = 0; i < b * t; ++i) {
    if (c.doc_every > 0 && i % c.doc_every == 3) tokens[size_t(i)] = 1;
  }
  cpu::attention_key_start(lo.data(), tokens.data(), t, b, t, c.mask);
  std::vector<float> q = Random(size_t(n), -2.f, 2.f, rng), k = Random(size_t(n), -2.f, 2.f, rng),
                     v = Random(size_t(n), -1.f, 1.f, rng),
                     dout = Random(size_t(n), -1.f, 1.f, rng);
  std::vector<bf16> q16 = ToBf16(q), k16 = ToBf16(k), v16 = ToBf16(v), dout16 = ToBf16(dout);
  // Poisoned outputs: a row the kernels never write shows as NaN.
  std::vector<bf16> out16(size_t(n), __float2bfloat16(NAN));
  std::vector<float> lse(size_t(b * nh * t), NAN), dq(size_t(n), NAN), dk(size_t(n), NAN),
      dv(size_t(n), NAN);
  if (hd == 64) {
    RunKernels<64>(c, mode, b, nh, scale, q16, k16, v16, dout16, lo, out16, lse, dq, dk, dv);
  } else {
    RunKernels<128>(c, mode, b, nh, scale, q16, k16, v16, dout16, lo, out16, lse, dq, dk, dv);
  }
  if (HasFatalFailure()) return;

  std::vector<float> want_out(static_cast<size_t>(n)), want_lse(static_cast<size_t>(b * nh * t));
  cpu::attention_forward(want_out.data(), want_lse.data(), q.data(), k.data(), v.data(), lo.data(),
                         b, t, nh, hd, scale);
  std::vector<float> out = ToFloat(out16);
  EXPECT_LT(RelError(out, want_out), 1e-2);
  EXPECT_LT(MaxAbsError(lse, want_lse), 1e-3);

  // The backward reads the kernels' own bf16 output, as the model does; the CPU gets the same.
  std::vector<float> want_dq(static_cast<size_t>(n)), want_dk(static_cast<size_t>(n)),
      want_dv(static_cast<size_t>(n));
  cpu::attention_backward(want_dq.data(), want_dk.data(), want_dv.data(), dout.data(), q.data(),
                          k.data(), v.data(), out.data(), want_lse.data(), lo.data(), b, t, nh, hd,
                          scale);
  EXPECT_LT(RelError(dq, want_dq), 2e-2);
  EXPECT_LT(RelError(dk, want_dk), 2e-2);
  EXPECT_LT(RelError(dv, want_dv), 2e-2);
}

cpu::AttentionMask Causal() { return {}; }
cpu::AttentionMask Docs() { return {true, 1, 0, 1}; }
cpu::AttentionMask Window(int64_t blocks, int64_t block_tokens) {
  return {false, 1, blocks, block_tokens};
}
cpu::AttentionMask DocsAndWindow(int64_t blocks, int64_t block_tokens) {
  return {true, 1, blocks, block_tokens};
}

INSTANTIATE_TEST_SUITE_P(
    Masks, MmaAttentionEmulated,
    ::testing::Combine(
        ::testing::Values(
            // 200 rows: three full query blocks and a partial one; key tiles at unaligned starts.
            Case{"hd128_causal", 128, Causal(), 200, 0}, Case{"hd128_docs", 128, Docs(), 200, 37},
            Case{"hd128_window", 128, Window(2, 48), 200, 0},
            Case{"hd128_diagonal_block", 128, Window(1, 64), 200, 0},
            Case{"hd128_docs_window", 128, DocsAndWindow(3, 16), 200, 37},
            // Long documents and wide windows: tiles wholly visible, the unmasked path.
            Case{"hd128_long_docs_blocks", 128, DocsAndWindow(2, 64), 330, 150},
            // T a multiple of 64, r20's 128-token blocks (one-block window: the diagonal only).
            Case{"hd128_t256_one_block", 128, DocsAndWindow(1, 128), 256, 90},
            Case{"hd64_causal", 64, Causal(), 200, 0},
            Case{"hd64_docs_window", 64, DocsAndWindow(3, 16), 200, 37},
            Case{"hd64_short", 64, Causal(), 10, 0}),
        ::testing::Values(kRunAhead, kLateCopies)),
    [](const ::testing::TestParamInfo<std::tuple<Case, emulated::EmulationMode>>& info) {
      bool ahead = std::get<1>(info.param).schedule == emulated::Schedule::kLowestFirst;
      return std::get<0>(info.param).name + (ahead ? "_run_ahead" : "_late_copies");
    });

// The dK/dV kernel's count of query tiles takes several rounds of 128 tiles when nothing but
// causality bounds them (T > 8192 without documents or windows: too long to emulate whole).
TEST(MmaAttentionQueryTiles, CountsEveryTileOverSeveralRounds) {
  const int64_t t = 64 * 300 + 10;
  std::vector<int32_t> lo(static_cast<size_t>(t), 0);
  for (int64_t k0 : {int64_t(0), int64_t(64), int64_t(64 * 200)}) {
    int tiles = -1;
    std::string error = Launch(dim3(1, 1, 1), mma::kThreads, 0, [&] {
      int n = mma::QueryTiles<P>(lo.data(), k0, k0 + 63, t);
      if (P::Thread() == 0) tiles = n;
    });
    ASSERT_EQ(error, "");
    EXPECT_EQ(tiles, (t - k0 + 63) / 64) << "k0 " << k0;
  }
  // A window: queries from 1,000 on see nothing before key 500.
  for (int64_t i = 1000; i < t; ++i) lo[size_t(i)] = 500;
  int tiles = -1;
  std::string error = Launch(dim3(1, 1, 1), mma::kThreads, 0, [&] {
    int n = mma::QueryTiles<P>(lo.data(), 0, 63, t);
    if (P::Thread() == 0) tiles = n;
  });
  ASSERT_EQ(error, "");
  EXPECT_EQ(tiles, 16);  // first queries 0, 64, ..., 960
}

// The emulator's own checks: a barrier only some threads reach is a deadlock, and an ldmatrix
// outside the block's shared memory is refused; both name the block.
TEST(GpuEmulator, ABarrierNotEveryThreadReachesIsADeadlock) {
  std::string error = Launch(dim3(2, 1, 1), 64, 256, [] {
    if (P::Block().x == 1 && P::Thread() == 5) return;
    P::Sync();
  });
  EXPECT_NE(error.find("block (1, 0, 0): deadlock"), std::string::npos) << error;
}

TEST(GpuEmulator, AnLdmatrixOutsideSharedMemoryIsRefused) {
  std::string error = Launch(dim3(1, 1, 1), 32, 256, [] {
    uint32_t r[4];
    auto* p = reinterpret_cast<const bf16*>(P::Smem() + 256);
    P::Ldsm4(r, p);
  });
  EXPECT_NE(error.find("outside the block's shared memory"), std::string::npos) << error;
}

// One mma against a plain product, with fragments built by the layout the kernels assume
// (mma.m16n8k16: A row g cols 2c.., B rows 2c.. col g): the emulator and the kernels' header
// agree on it, and a product of known integers comes out exact.
TEST(GpuEmulator, MmaOfFragmentsIsTheMatrixProduct) {
  float a[16][16], bm[16][8];
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) a[i][j] = float((i * 3 + j * 5) % 7 - 3);
    for (int j = 0; j < 8; ++j) bm[i][j] = float((i * 2 + j * 7) % 5 - 2);
  }
  std::vector<float> got(16 * 8, NAN);
  std::string error = Launch(dim3(1, 1, 1), 32, 0, [&] {
    int lane = P::Thread(), g = lane / 4, c = lane % 4;
    uint32_t fa[4] = {mma::Pack(a[g][2 * c], a[g][2 * c + 1]),
                      mma::Pack(a[g + 8][2 * c], a[g + 8][2 * c + 1]),
                      mma::Pack(a[g][2 * c + 8], a[g][2 * c + 9]),
                      mma::Pack(a[g + 8][2 * c + 8], a[g + 8][2 * c + 9])};
    uint32_t b0 = mma::Pack(bm[2 * c][g], bm[2 * c + 1][g]);
    uint32_t b1 = mma::Pack(bm[2 * c + 8][g], bm[2 * c + 9][g]);
    float acc[4] = {1.f, 1.f, 1.f, 1.f};
    P::Mma(acc, fa, b0, b1);
    got[size_t(g * 8 + 2 * c)] = acc[0];
    got[size_t(g * 8 + 2 * c + 1)] = acc[1];
    got[size_t((g + 8) * 8 + 2 * c)] = acc[2];
    got[size_t((g + 8) * 8 + 2 * c + 1)] = acc[3];
  });
  ASSERT_EQ(error, "");
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      float want = 1.f;
      for (int kk = 0; kk < 16; ++kk) want += a[i][kk] * bm[kk][j];
      EXPECT_EQ(got[size_t(i * 8 + j)], want) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace ablate
