// exp for the softmax loops that the compiler can vectorise (no libm call, no branches):
// 2^k · p(r) with r = x − k·ln2, |r| <= ln2/2, p a degree-6 Taylor polynomial
// (relative error below 2e-7, inside fp32 rounding of the sums it feeds). double uses std::exp
// so that finite-difference tests stay exact.
#ifndef ABLATE_TRAINER_CPU_FAST_EXP_H_
#define ABLATE_TRAINER_CPU_FAST_EXP_H_

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ablate::cpu {

inline float FastExp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  // Round to nearest by adding and removing 1.5·2^23 (vectorises, unlike nearbyint).
  float kf = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - kf * 0.693145751953125f - kf * 1.428606765330187e-06f;
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f +
                                   r * (8.3333333e-3f + r * 1.3888889e-3f)))));
  // NaN in gives NaN out (through p); its k is taken as 0, since converting NaN to an integer is
  // undefined behaviour (UBSan reports it; x86 happens to give INT_MIN).
  kf = kf == kf ? kf : 0.0f;
  int32_t bits = (int32_t(kf) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

inline double FastExp(double x) { return std::exp(x); }

// max over x[0, n). Sixteen independent lanes so that the compiler vectorises without
// reassociating a single chain (which it may not do without -ffast-math).
template <class T>
T RowMax(const T* x, int64_t n) {
  constexpr int64_t kLanes = 16;
  T lane[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) lane[l] = x[0];
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lane[l] = lane[l] > x[j + l] ? lane[l] : x[j + l];
  }
  T m = x[0];
  for (int64_t l = 0; l < kLanes; ++l) m = m > lane[l] ? m : lane[l];
  for (; j < n; ++j) m = m > x[j] ? m : x[j];
  return m;
}

// Σ exp(x[j] − shift) over j < n, with the same sixteen-lane layout.
template <class T>
T SumExpShifted(const T* x, int64_t n, T shift) {
  constexpr int64_t kLanes = 16;
  T lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lane[l] += FastExp(x[j + l] - shift);
  }
  T s = 0;
  for (int64_t l = 0; l < kLanes; ++l) s += lane[l];
  for (; j < n; ++j) s += FastExp(x[j] - shift);
  return s;
}

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_FAST_EXP_H_
