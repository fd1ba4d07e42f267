// Softcap + cross-entropy, one row per task. The backward needs only the capped logits: the cap's
// derivative is a function of its output (1 − (y/c)² for tanh, 4σ(1 − σ) with σ = y/c).
#include "trainer/cpu/softcap_cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "trainer/cpu/fast_exp.h"
#include "trainer/cpu/parallel.h"

namespace ablate::cpu {
namespace {

template <class T>
T Cap(T z, Softcap s) {
  T c = T(s.cap);
  // tanh(u) = 1 − 2/(e^{2u} + 1); FastExp keeps the float loop vectorisable.
  if (s.kind == SoftcapKind::kTanh) return c * (T(1) - T(2) / (FastExp(T(2) * z / c) + T(1)));
  if (s.kind == SoftcapKind::kSigmoid) return c / (T(1) + FastExp(-z / (c / T(4))));
  return z;
}

template <class T>
T CapGrad(T y, Softcap s) {
  T c = T(s.cap);
  if (s.kind == SoftcapKind::kTanh) return T(1) - (y / c) * (y / c);
  if (s.kind == SoftcapKind::kSigmoid) return T(4) * (y / c) * (T(1) - y / c);
  return T(1);
}

template <class T>
T RowLogSumExp(const T* row, int64_t v) {
  T mx = RowMax(row, v);
  return mx + std::log(SumExpShifted(row, v, mx));
}

}  // namespace

template <class T>
void softcap_cross_entropy_forward(T* losses, T* lse, T* logits, const int32_t* targets,
                                   int64_t n, int64_t v, Softcap cap) {
  ParallelFor(n, [&](int64_t i) {
    T* row = logits + i * v;
    if (cap.kind != SoftcapKind::kNone) {
      for (int64_t j = 0; j < v; ++j) row[j] = Cap(row[j], cap);
    }
    lse[i] = RowLogSumExp(row, v);
    losses[i] = lse[i] - row[targets[i]];
  });
}

template <class T>
void softcap_cross_entropy_backward(T* dlogits, const T* capped, const T* row_lse,
                                    const int32_t* targets, int64_t n, int64_t v, Softcap cap,
                                    T dloss) {
  ParallelFor(n, [&](int64_t i) {
    const T* row = capped + i * v;
    T* d = dlogits + i * v;
    T lse = row_lse[i];
    if (cap.kind == SoftcapKind::kNone) {
      for (int64_t j = 0; j < v; ++j) d[j] = dloss * FastExp(row[j] - lse);
    } else {
      for (int64_t j = 0; j < v; ++j) d[j] = dloss * FastExp(row[j] - lse) * CapGrad(row[j], cap);
    }
    d[targets[i]] -= dloss * CapGrad(row[targets[i]], cap);
  });
}

template void softcap_cross_entropy_forward<float>(float*, float*, float*,
                                                   const int32_t*, int64_t, int64_t, Softcap);
template void softcap_cross_entropy_forward<double>(double*, double*, double*,
                                                   const int32_t*, int64_t, int64_t, Softcap);
template void softcap_cross_entropy_backward<float>(float*, const float*, const float*,
                                                    const int32_t*, int64_t, int64_t, Softcap,
                                                    float);
template void softcap_cross_entropy_backward<double>(double*, const double*, const double*,
                                                    const int32_t*, int64_t, int64_t, Softcap,
                                                    double);

}  // namespace ablate::cpu
