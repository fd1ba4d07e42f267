// The backward's stream-gradient kernels (trainer/cuda/stream_kernels.cuh) on the CPU emulator of
// their primitives (gpu_emulator.h): the RMSNorm backward and the mix backward against their CPU
// twins (trainer/cpu/rmsnorm.h, residual.h, in double), the gradient add exactly, and, for each,
// the bf16 copy of dx they write for the next bf16 GEMM: exactly bf16(dx) as stored, in every
// element (the copy's buffer starts as NaN), with dx itself the same bits as without the copy.
// The mix's weight gradients are sums over a fixed grid: the same bits under both schedules.
// The GPU runs the same kernels in tests/trainer/cuda_ops_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/trainer/emulated/gpu_emulator.h"
#include "trainer/cpu/residual.h"
#include "trainer/cpu/rmsnorm.h"
#include "trainer/cuda/stream_kernels.cuh"

namespace ablate {
namespace {

namespace sk = cuda::stream_kernels;
using cuda::bf16;
using emulated::EmulatedPrimitives;
using emulated::EmulationMode;
using emulated::Schedule;

std::vector<float> StreamRandom(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<bf16> NanBf16(size_t n) {
  return std::vector<bf16>(n, __float2bfloat16(std::nanf("")));
}

// Every element of copy is bf16(of) of the same element, bit for bit.
void ExpectBf16Copy(const std::vector<bf16>& copy, const std::vector<float>& of) {
  ASSERT_EQ(copy.size(), of.size());
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < of.size(); ++i) {
    bf16 want = __float2bfloat16(of[i]);
    if (std::memcmp(&want, &copy[i], sizeof(bf16)) != 0 && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0u) << "elements whose bf16 copy is not bf16(dx); the first at " << first;
}

// max |got − want| / max(1, |want|).
double WorstRelative(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst =
        std::max(worst, std::fabs(double(got[i]) - want[i]) / std::max(1.0, std::fabs(want[i])));
  }
  return worst;
}

std::vector<double> ToDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

EmulationMode ModeOf(Schedule schedule) {
  EmulationMode mode;
  mode.schedule = schedule;
  return mode;
}

// ---- RMSNorm backward ---------------------------------------------------------------------

template <class TIn>
std::string EmulatedNormBackward(std::vector<float>& dinp, std::vector<bf16>* dinp_bf16,
                                 const std::vector<float>& dout, const std::vector<TIn>& inp,
                                 const std::vector<float>& rstd, int64_t n, int64_t c, bool add,
                                 Schedule schedule) {
  sk::NormBackwardArgs<TIn> args{dinp.data(), dinp_bf16 != nullptr ? dinp_bf16->data() : nullptr,
                                 dout.data(), inp.data(),
                                 rstd.data(), n,
                                 c,           add};
  return emulated::Launch(
      dim3(sk::RowBlocks(n), 1, 1), sk::kThreads, 0,
      [&] { sk::RmsNormBackwardKernel<EmulatedPrimitives, TIn>(args); }, ModeOf(schedule));
}

template <class TIn>
void CheckNormBackward(int64_t n, int64_t c, bool add) {
  SCOPED_TRACE("N " + std::to_string(n) + ", C " + std::to_string(c) + (add ? ", +=" : ", ="));
  size_t nc = size_t(n * c);
  std::vector<float> x32 = StreamRandom(nc, 11, 2.f), dout = StreamRandom(nc, 12),
                     start = StreamRandom(nc, 13);
  std::vector<TIn> inp(nc);
  for (size_t i = 0; i < nc; ++i) inp[i] = TIn(x32[i]);
  // The forward's statistics and the twin's result, in double from the stored input.
  std::vector<double> xd(nc), rstd_d(static_cast<size_t>(n)), want(nc), doutd = ToDouble(dout);
  for (size_t i = 0; i < nc; ++i) xd[i] = double(float(inp[i]));
  std::vector<double> ignored(nc);
  cpu::rmsnorm_forward<double>(ignored.data(), rstd_d.data(), xd.data(), n, c);
  std::vector<float> rstd(rstd_d.begin(), rstd_d.end());
  for (size_t r = 0; r < size_t(n); ++r) rstd_d[r] = double(rstd[r]);  // the kernel reads fp32
  want = add ? ToDouble(start) : std::vector<double>(nc, 0.0);
  cpu::rmsnorm_backward<double>(want.data(), doutd.data(), xd.data(), rstd_d.data(), n, c,
                                cpu::Output::kAdd);
  for (Schedule schedule : {Schedule::kRoundRobin, Schedule::kLowestFirst}) {
    std::vector<float> plain = start, copied = start;
    std::vector<bf16> copy = NanBf16(nc);
    ASSERT_EQ(EmulatedNormBackward(plain, nullptr, dout, inp, rstd, n, c, add, schedule), "");
    ASSERT_EQ(EmulatedNormBackward(copied, &copy, dout, inp, rstd, n, c, add, schedule), "");
    EXPECT_EQ(copied, plain) << "dx differs when the bf16 copy is written too";
    ExpectBf16Copy(copy, copied);
    EXPECT_LT(WorstRelative(plain, want), 2e-5) << "against the CPU twin in double";
  }
}

TEST(StreamEmulated, RmsNormBackwardMatchesTheTwinAndWritesItsBf16Copy) {
  for (bool add : {true, false}) {
    CheckNormBackward<float>(37, 768, add);  // rows over several blocks, a partial last block
    CheckNormBackward<float>(9, 257, add);   // C not a multiple of 32
    CheckNormBackward<float>(16, 6, add);    // fewer channels than lanes
  }
  CheckNormBackward<bf16>(24, 128, false);  // the bf16 input qk-norm's rows are stored in
}

// ---- Mix backward -------------------------------------------------------------------------

struct MixCase {
  int64_t n;
  bool dx_add, with_y;
};

struct MixResult {
  std::vector<float> dx, dy;
  std::vector<bf16> dx_bf16;
  float da = 0, db = 0;
};

std::string EmulatedMixBackward(const MixCase& k, const std::vector<float>& dout,
                                const std::vector<float>& x, const std::vector<float>& y,
                                const float* weights, bool bf16_copy, MixResult& r,
                                Schedule schedule) {
  std::vector<float> partial(2 * sk::kMixBlocks, std::nanf(""));
  cuda::MixGrads g;
  g.dx = r.dx.data();
  g.dx_mode = k.dx_add ? cpu::Output::kAdd : cpu::Output::kOverwrite;
  g.dy = k.with_y ? r.dy.data() : nullptr;
  g.dy_mode = cpu::Output::kAdd;
  g.da = {&r.da, 1.f};
  g.db = k.with_y ? cuda::GradTarget{&r.db, -1.f} : cuda::GradTarget{};
  g.dx_bf16 = bf16_copy ? r.dx_bf16.data() : nullptr;
  sk::MixBackwardArgs<float, float> args{g,
                                         dout.data(),
                                         x.data(),
                                         cuda::MixWeight::Param(weights),
                                         k.with_y ? y.data() : nullptr,
                                         cuda::MixWeight::OneMinus(weights + 1),
                                         k.n,
                                         partial.data()};
  std::string error = emulated::Launch(
      dim3(sk::kMixBlocks, 1, 1), sk::kThreads, sk::kSumSmemBytes,
      [&] { sk::MixBackwardKernel<EmulatedPrimitives, float, float>(args); }, ModeOf(schedule));
  if (!error.empty()) return error;
  return emulated::Launch(
      dim3(1, 1, 1), sk::kMixBlocks, sk::kSumSmemBytes,
      [&] { sk::MixFinalizeKernel<EmulatedPrimitives>(partial.data(), g.da, g.db); },
      ModeOf(schedule));
}

void CheckMixBackward(const MixCase& k) {
  SCOPED_TRACE("N " + std::to_string(k.n) + (k.dx_add ? ", dx +=" : ", dx =") +
               (k.with_y ? ", with y" : ", no y"));
  size_t n = size_t(k.n);
  std::vector<float> dout = StreamRandom(n, 21), x = StreamRandom(n, 22), y = StreamRandom(n, 23),
                     dx0 = StreamRandom(n, 24), dy0 = StreamRandom(n, 25);
  const float weights[2] = {0.75f, 0.375f};  // a = 0.75, b = 1 − 0.375
  std::vector<double> want_dx = k.dx_add ? ToDouble(dx0) : std::vector<double>(n, 0.0),
                      want_dy = ToDouble(dy0), doutd = ToDouble(dout), xd = ToDouble(x),
                      yd = ToDouble(y);
  double want_da = 0.5, want_db = 0.25;
  double db_sum = 0;
  cpu::MixGrads<double> twin{want_dx.data(), k.with_y ? want_dy.data() : nullptr, &want_da,
                             k.with_y ? &db_sum : nullptr};
  cpu::residual_mix_backward<double>(twin, doutd.data(), xd.data(), 0.75, yd.data(), 0.625, k.n);
  want_db -= db_sum;  // the kernel's target has scale −1
  std::vector<MixResult> runs;
  for (Schedule schedule : {Schedule::kRoundRobin, Schedule::kLowestFirst}) {
    for (bool copy : {false, true}) {
      MixResult r{dx0, dy0, NanBf16(n), 0.5f, 0.25f};
      ASSERT_EQ(EmulatedMixBackward(k, dout, x, y, weights, copy, r, schedule), "");
      if (copy) ExpectBf16Copy(r.dx_bf16, r.dx);
      runs.push_back(std::move(r));
    }
  }
  for (const MixResult& r : runs) {
    EXPECT_EQ(r.dx, runs[0].dx) << "dx depends on the schedule or on the bf16 copy";
    EXPECT_EQ(r.dy, runs[0].dy);
    EXPECT_EQ(std::memcmp(&r.da, &runs[0].da, 4), 0) << "da's bits depend on the schedule";
    EXPECT_EQ(std::memcmp(&r.db, &runs[0].db, 4), 0) << "db's bits depend on the schedule";
  }
  const MixResult& r = runs[0];
  EXPECT_LT(WorstRelative(r.dx, want_dx), 1e-6);
  if (k.with_y) {
    EXPECT_LT(WorstRelative(r.dy, want_dy), 1e-6);
  }
  // Sums of N products of numbers in [−1, 1] in fp32: a few ulps of √N-sized partials.
  double tol = 1e-6 * std::sqrt(double(k.n)) + 1e-6;
  EXPECT_NEAR(r.da, want_da, tol);
  if (k.with_y) {
    EXPECT_NEAR(r.db, want_db, tol);
  }
}

TEST(StreamEmulated, MixBackwardMatchesTheTwinWithFixedSumsAndWritesItsBf16Copy) {
  // Over one pass of the grid (some threads take two elements), and far under it (most blocks
  // have nothing: their partials must still be written, as zeros).
  int64_t grid = int64_t(sk::kMixBlocks) * sk::kThreads;
  CheckMixBackward({grid + 1000, false, true});
  CheckMixBackward({1000, true, true});
  CheckMixBackward({777, false, false});
}

// ---- A bf16 stream in bf16 buffers ------------------------------------------------------

// The model stores a bf16 stream's values (x0, the stream, the skips) in bf16 buffers: the
// backward kernels that read them must give the bits they give on fp32 buffers holding the same
// values (gpt_backward.cc's norm, shortcut and skip backward).
TEST(StreamEmulated, Bf16StreamBuffersGiveTheBitsOfFp32BuffersWithTheSameValues) {
  int64_t n = 37, c = 768;
  size_t nc = size_t(n * c);
  std::vector<float> dout = StreamRandom(nc, 31), start = StreamRandom(nc, 32),
                     x32 = StreamRandom(nc, 33, 2.f), y32 = StreamRandom(nc, 34, 2.f);
  std::vector<bf16> xb(nc), yb(nc);
  for (size_t i = 0; i < nc; ++i) {
    xb[i] = bf16(x32[i]);
    yb[i] = bf16(y32[i]);
    x32[i] = float(xb[i]);
    y32[i] = float(yb[i]);
  }
  std::vector<float> rstd = StreamRandom(size_t(n), 35);
  for (float& r : rstd) r = 1.f + std::fabs(r);
  for (Schedule schedule : {Schedule::kRoundRobin, Schedule::kLowestFirst}) {
    std::vector<float> dx_f = start, dx_b = start;
    std::vector<bf16> copy_f = NanBf16(nc), copy_b = NanBf16(nc);
    ASSERT_EQ(EmulatedNormBackward<float>(dx_f, &copy_f, dout, x32, rstd, n, c, true, schedule),
              "");
    ASSERT_EQ(EmulatedNormBackward<bf16>(dx_b, &copy_b, dout, xb, rstd, n, c, true, schedule), "");
    EXPECT_EQ(dx_b, dx_f) << "norm backward";
    EXPECT_EQ(std::memcmp(copy_b.data(), copy_f.data(), nc * sizeof(bf16)), 0);
  }
  auto mix = [&](const auto& x, const auto& y, MixResult& r) {
    using TX = typename std::decay_t<decltype(x)>::value_type;
    std::vector<float> partial(2 * sk::kMixBlocks, std::nanf(""));
    const float weights[2] = {0.75f, 0.375f};
    cuda::MixGrads g;
    g.dx = r.dx.data();
    g.dx_mode = cpu::Output::kOverwrite;
    g.dy = r.dy.data();
    g.dy_mode = cpu::Output::kAdd;
    g.da = {&r.da, 1.f};
    g.db = {&r.db, 1.f};
    g.dx_bf16 = r.dx_bf16.data();
    sk::MixBackwardArgs<TX, TX> args{g,           dout.data(),
                                     x.data(),    cuda::MixWeight::Param(weights),
                                     y.data(),    cuda::MixWeight::Param(weights + 1),
                                     int64_t(nc), partial.data()};
    ASSERT_EQ(emulated::Launch(dim3(sk::kMixBlocks, 1, 1), sk::kThreads, sk::kSumSmemBytes,
                               [&] { sk::MixBackwardKernel<EmulatedPrimitives, TX, TX>(args); }),
              "");
    ASSERT_EQ(emulated::Launch(
                  dim3(1, 1, 1), sk::kMixBlocks, sk::kSumSmemBytes,
                  [&] { sk::MixFinalizeKernel<EmulatedPrimitives>(partial.data(), g.da, g.db); }),
              "");
  };
  MixResult f{start, start, NanBf16(nc), 0.5f, 0.25f}, b = f;
  mix(x32, y32, f);
  mix(xb, yb, b);
  EXPECT_EQ(b.dx, f.dx) << "mix backward";
  EXPECT_EQ(b.dy, f.dy);
  EXPECT_EQ(std::memcmp(&b.da, &f.da, 4), 0);
  EXPECT_EQ(std::memcmp(&b.db, &f.db, 4), 0);
  EXPECT_EQ(std::memcmp(b.dx_bf16.data(), f.dx_bf16.data(), nc * sizeof(bf16)), 0);
}

// ---- The gradient add ---------------------------------------------------------------------

TEST(StreamEmulated, AddIsExactAndWritesItsBf16Copy) {
  const int64_t n = 5000;
  std::vector<float> dst0 = StreamRandom(size_t(n), 31), src = StreamRandom(size_t(n), 32);
  std::vector<float> want(dst0);
  for (size_t i = 0; i < want.size(); ++i) want[i] += src[i];
  for (unsigned blocks : {1u, 3u}) {  // a grid that covers n in one pass, and one that strides
    SCOPED_TRACE(std::to_string(blocks) + " blocks");
    std::vector<float> dst = dst0;
    std::vector<bf16> copy = NanBf16(size_t(n));
    sk::AddArgs args{dst.data(), copy.data(), src.data(), n, int64_t(blocks) * sk::kThreads};
    ASSERT_EQ(emulated::Launch(dim3(blocks, 1, 1), sk::kThreads, 0,
                               [&] { sk::AddKernel<EmulatedPrimitives>(args); }),
              "");
    EXPECT_EQ(dst, want);
    ExpectBf16Copy(copy, dst);
  }
}

}  // namespace
}  // namespace ablate
