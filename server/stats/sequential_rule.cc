// Calibrated alpha-spending boundaries and the per-look decision; see sequential_rule.h.
#include "server/stats/sequential_rule.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <numbers>
#include <tuple>

#include "common/thread_annotations.h"
#include "common/stats/t_tests.h"

namespace ablate {
namespace {

constexpr uint64_t kCalibrationSeed = 0x5EED5EED2026ull;

// splitmix64 + Box-Muller: the same normals on every platform (std::normal_distribution's output
// is the library's choice), so the boundaries are too.
class Normals {
 public:
  explicit Normals(uint64_t seed) : state_(seed) {}
  double Next() {
    if (spare_) {
      spare_ = false;
      return saved_;
    }
    double u1 = Uniform(), u2 = Uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    saved_ = r * std::sin(2.0 * std::numbers::pi * u2);
    spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  double Uniform() {  // (0, 1]
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 1.0) * 0x1.0p-53;
  }
  uint64_t state_;
  bool spare_ = false;
  double saved_ = 0.0;
};

// Welch two-sided p from running sums of two equal-size samples (n >= 2), as WelchTest computes
// it, without building the samples (the calibration runs it 500,000 times).
double WelchP(int n, double sa, double qa, double sb, double qb) {
  const double ma = sa / n, mb = sb / n;
  const double va = std::max(0.0, (qa - n * ma * ma) / (n - 1)) / n;  // squared standard errors
  const double vb = std::max(0.0, (qb - n * mb * mb) / (n - 1)) / n;
  if (va + vb == 0.0) return ma == mb ? 1.0 : 0.0;
  const double t = (ma - mb) / std::sqrt(va + vb);
  const double df = (va + vb) * (va + vb) / ((va * va + vb * vb) / (n - 1));
  const boost::math::students_t dist(df);
  return std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(dist, std::fabs(t))));
}

// p-values of one simulated sweep under no difference at each look (index n - min).
std::vector<double> SimulatedLooks(Normals& normals, const SequentialDesign& d) {
  std::vector<double> p;
  double sa = 0, qa = 0, sb = 0, qb = 0;
  for (int n = 1; n <= d.max_seeds; ++n) {
    const double x = normals.Next(), y = normals.Next();
    sa += x, qa += x * x, sb += y, qb += y * y;
    if (n >= d.min_seeds) p.push_back(WelchP(n, sa, qa, sb, qb));
  }
  return p;
}

using Paths = std::vector<std::vector<double>>;

// Look j's boundary: the largest of the `allowed` smallest p-values among the simulated sweeps
// that have not crossed yet, so that exactly that many cross now (0: none may).
double LookBoundary(const Paths& paths, const std::vector<bool>& crossed, int j, int64_t allowed) {
  if (allowed < 1) return 0.0;
  std::vector<double> alive;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!crossed[i]) alive.push_back(paths[i][j]);
  }
  if (alive.empty()) return 0.0;
  std::sort(alive.begin(), alive.end());
  return alive[std::min<size_t>(allowed, alive.size()) - 1];
}

std::vector<double> Calibrate(const SequentialDesign& d) {
  Normals normals(kCalibrationSeed);
  Paths paths(kCalibrationSweeps);
  for (std::vector<double>& path : paths) path = SimulatedLooks(normals, d);
  std::vector<bool> crossed(paths.size(), false);
  std::vector<double> boundaries;
  int64_t crossed_so_far = 0;
  for (int j = 0; j <= d.max_seeds - d.min_seeds; ++j) {
    const double t = static_cast<double>(d.min_seeds + j) / d.max_seeds;
    const auto spent = static_cast<int64_t>(
        std::floor(d.alpha * std::pow(t, kSpendingExponent) * kCalibrationSweeps));
    const double boundary = LookBoundary(paths, crossed, j, spent - crossed_so_far);
    boundaries.push_back(boundary);
    for (size_t i = 0; i < paths.size(); ++i) {
      if (!crossed[i] && boundary > 0.0 && paths[i][j] <= boundary) {
        crossed[i] = true;
        ++crossed_so_far;
      }
    }
  }
  return boundaries;
}

// Times to target of reached runs with seed < n.
std::vector<double> TimesBelowSeed(std::span<const RunOutcome> runs, int n) {
  std::vector<double> out;
  for (const RunOutcome& r : runs) {
    if (r.seed < n && r.reached_target && r.time_to_target_ms) out.push_back(*r.time_to_target_ms);
  }
  return out;
}

}  // namespace

double PerAblationAlpha(int ablations) {
  return kSequentialAlpha / std::max(1, ablations);
}

std::vector<double> SequentialBoundaries(const SequentialDesign& design) {
  static AnnotatedMutex mu;
  static auto* cache ABLATE_PT_GUARDED_BY(mu) =
      new std::map<std::tuple<int, int, double>, std::vector<double>>();
  const auto key = std::make_tuple(design.min_seeds, design.max_seeds, design.alpha);
  {
    AnnotatedMutexLock lock(&mu);
    if (auto it = cache->find(key); it != cache->end()) return it->second;
  }
  std::vector<double> boundaries = Calibrate(design);
  AnnotatedMutexLock lock(&mu);
  return cache->emplace(key, std::move(boundaries)).first->second;
}

SequentialDecision DecideSequential(std::span<const RunOutcome> variant,
                                    std::span<const RunOutcome> baseline,
                                    const SequentialDesign& design, int blocks_done) {
  SequentialDecision d;
  d.verdict = "open";
  const int last = std::min(blocks_done, design.max_seeds);
  if (last < design.min_seeds) return d;
  const std::vector<double> boundaries = SequentialBoundaries(design);
  for (int n = design.min_seeds; n <= last; ++n) {
    d.seeds = n;
    d.boundary = boundaries[n - design.min_seeds];
    const std::vector<double> a = TimesBelowSeed(variant, n), b = TimesBelowSeed(baseline, n);
    const std::optional<TTestResult> welch = WelchTest(a, b);
    d.p_value = welch ? std::optional<double>(welch->p_value) : std::nullopt;
    if (welch && welch->p_value <= d.boundary && welch->difference != 0.0) {
      d.settled = true;
      d.verdict = welch->difference < 0 ? "faster" : "slower";
      return d;
    }
  }
  if (last == design.max_seeds) {
    d.settled = true;
    d.verdict = "no difference";
  }
  return d;
}

}  // namespace ablate
