// Finite-difference helpers for the trainer's gradient tests (double precision).
#ifndef ABLATE_TESTS_TRAINER_GRAD_CHECK_H_
#define ABLATE_TESTS_TRAINER_GRAD_CHECK_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace ablate::testing {

inline std::vector<double> RandomVec(int64_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) {
    x = u(rng);
    if (std::abs(x) < 1e-3) x = 0.25;  // never zero: zero hides missing terms
  }
  return v;
}

// Largest |numeric − analytic| / max(1e-6, |numeric| + |analytic|) over the coordinates of x,
// with f(x) a scalar and analytic its claimed gradient. Coordinates are sampled (at most
// max_coords, evenly spread) to keep big tensors cheap.
inline double MaxRelError(std::vector<double>& x, const std::function<double()>& f,
                          const std::vector<double>& analytic, double h = 1e-5,
                          int64_t max_coords = 200) {
  double worst = 0;
  int64_t n = int64_t(x.size());
  int64_t stride = n > max_coords ? n / max_coords : 1;
  for (int64_t i = 0; i < n; i += stride) {
    double keep = x[i];
    x[i] = keep + h;
    double fp = f();
    x[i] = keep - h;
    double fm = f();
    x[i] = keep;
    double num = (fp - fm) / (2 * h);
    double err = std::abs(num - analytic[i]) / std::max(1e-4, std::abs(num) + std::abs(analytic[i]));
    worst = std::max(worst, err);
  }
  return worst;
}

inline double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_TRAINER_GRAD_CHECK_H_
