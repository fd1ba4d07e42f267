// RMSNorm forward/backward, one row per loop iteration (rows are independent).
#include "trainer/cpu/rmsnorm.h"

#include <cmath>

#include "trainer/cpu/parallel.h"
#include "trainer/cpu/reduce.h"

namespace ablate::cpu {

template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, int64_t n, int64_t c) {
  ParallelFor(n, [&](int64_t i) {
    const T* x = inp + i * c;
    T* y = out + i * c;
    T ss = LaneDot(x, x, c);
    T r = T(1) / std::sqrt(ss / T(c) + T(kRmsNormEps));
    for (int64_t j = 0; j < c; ++j) y[j] = x[j] * r;
    rstd[i] = r;
  });
}

// y = x·r with r = (mean(x²)+eps)^-1/2, so dx = r·dy − r³·x·(dy·x)/C.
template <class T>
void rmsnorm_backward(T* dinp, const T* dout, const T* inp, const T* rstd, int64_t n, int64_t c,
                      Output mode) {
  ParallelFor(n, [&](int64_t i) {
    const T* x = inp + i * c;
    const T* dy = dout + i * c;
    T* dx = dinp + i * c;
    T r = rstd[i];
    T k = r * r * r * LaneDot(dy, x, c) / T(c);
    if (mode == Output::kOverwrite) {
      for (int64_t j = 0; j < c; ++j) dx[j] = r * dy[j] - k * x[j];
    } else {
      for (int64_t j = 0; j < c; ++j) dx[j] += r * dy[j] - k * x[j];
    }
  });
}

template void rmsnorm_forward<float>(float*, float*, const float*, int64_t, int64_t);
template void rmsnorm_forward<double>(double*, double*, const double*, int64_t, int64_t);
template void rmsnorm_backward<float>(float*, const float*, const float*, const float*, int64_t,
                                      int64_t, Output);
template void rmsnorm_backward<double>(double*, const double*, const double*, const double*,
                                       int64_t, int64_t, Output);

}  // namespace ablate::cpu
