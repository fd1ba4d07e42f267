// The classifier's row-in-registers kernel (trainer/cuda/classifier_kernels.cuh) on the CPU
// emulator of its primitives (gpu_emulator.h), against the CPU twin in double
// (trainer/cpu/softcap_cross_entropy.h): losses, dlogits in every element (the buffer starts as
// NaN), each cap, with and without dlogits, for rows that fill the per-thread counts exactly,
// leave padding, and the records' 50,304. The GPU runs it, and the two-pass kernel, in
// tests/trainer/cuda_ops_test.cc
// (CudaOps.FusedClassifierMatchesCpuForwardThenBackward).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/trainer/emulated/gpu_emulator.h"
#include "trainer/cpu/softcap_cross_entropy.h"
#include "trainer/cuda/classifier_kernels.cuh"

namespace ablate {
namespace {

namespace ck = cuda::classifier_kernels;
using cuda::bf16;
using emulated::EmulatedPrimitives;

template <int kPer>
std::string EmulatedClassifier(const ck::ClassifierArgs& args, int64_t n) {
  return emulated::Launch(dim3(unsigned(n), 1, 1), ck::kThreads, ck::kSmemBytes,
                          [&] { ck::ClassifierRowKernel<EmulatedPrimitives, kPer>(args); });
}

std::string RunClassifier(const ck::ClassifierArgs& args, int64_t n) {
  switch (ck::RowKernelPer(args.v)) {
    case ck::kPerCounts[0]:
      return EmulatedClassifier<ck::kPerCounts[0]>(args, n);
    case ck::kPerCounts[1]:
      return EmulatedClassifier<ck::kPerCounts[1]>(args, n);
    case ck::kPerCounts[2]:
      return EmulatedClassifier<ck::kPerCounts[2]>(args, n);
    case ck::kPerCounts[3]:
      return EmulatedClassifier<ck::kPerCounts[3]>(args, n);
    default:
      return "no row kernel for v = " + std::to_string(args.v);
  }
}

void CheckClassifier(int64_t n, int64_t v, cpu::Softcap cap) {
  SCOPED_TRACE("N " + std::to_string(n) + ", V " + std::to_string(v) + ", cap kind " +
               std::to_string(int(cap.kind)));
  std::mt19937 rng(uint32_t(v * 7 + int(cap.kind)));
  std::normal_distribution<float> normal(0.f, 4.f);
  std::uniform_int_distribution<int32_t> id(0, int32_t(v - 1));
  size_t nv = size_t(n * v);
  std::vector<float> logits(nv);
  for (float& z : logits) z = normal(rng);
  std::vector<int32_t> targets(static_cast<size_t>(n));
  for (int32_t& t : targets) t = id(rng);
  targets[0] = int32_t(v - 1);  // the last logit of the row: the last thread's last slot
  float dloss = 1.f / float(n);
  // The twin in double (its forward caps in place).
  std::vector<double> capped(logits.begin(), logits.end()), losses_d(static_cast<size_t>(n)),
      lse(static_cast<size_t>(n)), dlogits_d(nv);
  cpu::softcap_cross_entropy_forward<double>(losses_d.data(), lse.data(), capped.data(),
                                             targets.data(), n, v, cap);
  cpu::softcap_cross_entropy_backward<double>(dlogits_d.data(), capped.data(), lse.data(),
                                              targets.data(), n, v, cap, double(dloss));
  ck::DeviceCap dc{cap.kind, float(cap.cap)};
  for (bool backward : {true, false}) {
    std::vector<float> losses(static_cast<size_t>(n), std::nanf(""));
    std::vector<bf16> dlogits(nv, __float2bfloat16(std::nanf("")));
    ck::ClassifierArgs args{
        losses.data(), backward ? dlogits.data() : nullptr, logits.data(), targets.data(), v, dc,
        dloss};
    ASSERT_EQ(RunClassifier(args, n), "");
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_NEAR(losses[size_t(r)], losses_d[size_t(r)], 2e-6 * std::max(1.0, losses_d[size_t(r)]))
          << "row " << r;
    }
    if (!backward) continue;
    // Each gradient is a few fp32 operations rounded once to bf16 (2^-9 relative), plus the
    // fp32 error of exp(y − lse) near 0.
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < nv; ++i) {
      double got = double(__bfloat162float(dlogits[i])), want = dlogits_d[i];
      if (!(std::fabs(got - want) <= std::fabs(want) * 0x1p-8 + 1e-9 * dloss) && wrong++ == 0) {
        first = i;
      }
    }
    EXPECT_EQ(wrong, 0u) << "dlogits off the twin; the first at " << first << ": "
                         << __bfloat162float(dlogits[first]) << " vs " << dlogits_d[first];
  }
}

TEST(ClassifierEmulated, RowKernelMatchesTheTwin) {
  using cpu::SoftcapKind;
  for (cpu::Softcap cap :
       {cpu::Softcap{SoftcapKind::kNone, 0.0}, cpu::Softcap{SoftcapKind::kTanh, 15.0},
        cpu::Softcap{SoftcapKind::kSigmoid, 30.0}}) {
    CheckClassifier(3, 300, cap);   // per-thread count 4, padding in every thread's last slot
    CheckClassifier(2, 4096, cap);  // 16 per thread exactly
  }
  CheckClassifier(2, 50304, {SoftcapKind::kSigmoid, 30.0});  // r20's vocabulary, 200 per thread
  CheckClassifier(1, 1, {SoftcapKind::kNone, 0.0});          // one logit: loss 0, gradient 0
}

TEST(ClassifierEmulated, RowKernelCoversTheVocabulariesItIsBuiltFor) {
  EXPECT_EQ(ck::RowKernelPer(1), ck::kPerCounts[0]);
  EXPECT_EQ(ck::RowKernelPer(50304), 200);
  EXPECT_EQ(ck::RowKernelPer(51200), 200);
  EXPECT_EQ(ck::RowKernelPer(51201), 0);  // the two-pass kernel then
  for (int64_t v = 1; v <= 51200; v += 97) {
    int per = ck::RowKernelPer(v);
    EXPECT_GE(int64_t(per) * ck::kThreads, v) << v;
  }
}

}  // namespace
}  // namespace ablate
