// Shared pieces of the CUDA tests (label gpu): a device context or a loud skip, fresh random
// inputs that are never zero, host bf16 rounding (so the CPU twin sees exactly the operands the
// GPU reads), poisoned outputs and relative errors.
#ifndef ABLATE_TESTS_TRAINER_CUDA_TEST_UTIL_H_
#define ABLATE_TESTS_TRAINER_CUDA_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/dtype.h"

namespace ablate::testing {

// A fixture holding a context on device 0; every test skips, naming why, when there is none.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<cuda::DeviceInfo> info = cuda::ProbeDevice(0);
    if (!info.ok()) GTEST_SKIP() << info.error().message;
    Result<std::unique_ptr<cuda::CudaContext>> ctx = cuda::CudaContext::Create(0);
    ASSERT_TRUE(ctx.ok()) << ctx.error().message;
    ctx_ = std::move(ctx).value();
  }
  cuda::CudaContext& ctx() { return *ctx_; }

  std::unique_ptr<cuda::CudaContext> ctx_;
};

// A seed for each draw: fresh inputs in every test and every run of a test.
inline uint32_t FreshSeed() {
  static std::random_device rd;
  return rd();
}

// Uniform in [lo, hi), with values near zero moved away (zeros hide missing terms).
inline std::vector<float> Random(int64_t n, float lo = -1.f, float hi = 1.f,
                                 uint32_t seed = FreshSeed()) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    x = u(rng);
    if (std::abs(x) < 1e-3f) x = 0.25f * (hi - lo) / 2.f + 1e-3f;
  }
  return v;
}

inline std::vector<int32_t> RandomIds(int64_t n, int32_t below, uint32_t seed = FreshSeed()) {
  std::mt19937 rng(seed);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = int32_t(rng() % uint32_t(below));
  return v;
}

inline float RoundBf16(float x) { return __bfloat162float(__float2bfloat16(x)); }

inline std::vector<float> RoundBf16(std::vector<float> v) {
  for (float& x : v) x = RoundBf16(x);
  return v;
}

// ‖got − want‖ / ‖want‖ (infinite when anything is NaN or inf, or sizes differ).
inline double RelError(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) return INFINITY;
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

inline double MaxAbsError(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  }
  return worst;
}

// A device tensor of T (float, bf16 or int32_t) made from host values, read back as floats.
template <class T>
class DeviceTensor {
 public:
  DeviceTensor(cuda::CudaContext& ctx, int64_t n) : ctx_(ctx) {
    Status s = buf_.Allocate(n, "test tensor");
    EXPECT_TRUE(s.ok()) << s.message();
  }
  // Uploads `host` (converted to T: bf16 rounds to nearest even).
  template <class H>
  DeviceTensor(cuda::CudaContext& ctx, const std::vector<H>& host)
      : DeviceTensor(ctx, int64_t(host.size())) {
    Set(host);
  }

  template <class H>
  void Set(const std::vector<H>& host) {
    std::vector<T> tmp(host.size());
    for (size_t i = 0; i < host.size(); ++i) tmp[i] = Convert(host[i]);
    Status s = ctx_.ToDevice(buf_.get(), tmp.data(), int64_t(tmp.size() * sizeof(T)));
    EXPECT_TRUE(s.ok()) << s.message();
    s = ctx_.Synchronize();
    EXPECT_TRUE(s.ok()) << s.message();
  }
  // Fills every byte with 0xFF: NaN as float and as bf16, -1 as int32. Outputs are poisoned
  // before each op, so an element the op fails to write shows up.
  void Poison() {
    EXPECT_EQ(cudaMemsetAsync(buf_.get(), 0xFF, size_t(buf_.bytes()), ctx_.stream()), cudaSuccess);
  }
  std::vector<float> Get() {
    std::vector<T> tmp(size_t(buf_.size()));
    Status s = ctx_.ToHost(tmp.data(), buf_.get(), buf_.bytes());
    EXPECT_TRUE(s.ok()) << s.message();
    std::vector<float> out(tmp.size());
    for (size_t i = 0; i < tmp.size(); ++i) out[i] = ToFloat(tmp[i]);
    return out;
  }
  T* get() { return buf_.get(); }
  int64_t size() const { return buf_.size(); }

 private:
  template <class H>
  static T Convert(H x) {
    if constexpr (std::is_same_v<T, cuda::bf16>) {
      return __float2bfloat16(float(x));
    } else {
      return T(x);
    }
  }
  static float ToFloat(T x) {
    if constexpr (std::is_same_v<T, cuda::bf16>) {
      return __bfloat162float(x);
    } else {
      return float(x);
    }
  }

  cuda::CudaContext& ctx_;
  cuda::DeviceBuffer<T> buf_;
};

// Asserts an op's Status and that the device finished its work without error.
#define ABLATE_EXPECT_OP(ctx, ...)                            \
  do {                                                        \
    ::ablate::Status op_status_ = (__VA_ARGS__);              \
    ASSERT_TRUE(op_status_.ok()) << op_status_.message();     \
    ::ablate::Status sync_status_ = (ctx).Synchronize();      \
    ASSERT_TRUE(sync_status_.ok()) << sync_status_.message(); \
  } while (0)

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_TRAINER_CUDA_TEST_UTIL_H_
