// Dot products the compiler can vectorise without -ffast-math: sixteen independent partial sums
// (one AVX-512 register of floats), added in a fixed order, so results do not depend on the
// thread count or the vector width the build chose.
#ifndef ABLATE_TRAINER_CPU_REDUCE_H_
#define ABLATE_TRAINER_CPU_REDUCE_H_

#include <cstdint>

namespace ablate::cpu {

// Σ a[i]·b[i] over i < n.
template <class T>
T LaneDot(const T* a, const T* b, int64_t n) {
  constexpr int64_t kLanes = 16;
  T lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lane[l] += a[i + l] * b[i + l];
  }
  T s = 0;
  for (int64_t l = 0; l < kLanes; ++l) s += lane[l];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Σ x[i] over i < n, in the same sixteen-lane order.
template <class T>
T LaneSum(const T* x, int64_t n) {
  constexpr int64_t kLanes = 16;
  T lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lane[l] += x[i + l];
  }
  T s = 0;
  for (int64_t l = 0; l < kLanes; ++l) s += lane[l];
  for (; i < n; ++i) s += x[i];
  return s;
}

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_REDUCE_H_
