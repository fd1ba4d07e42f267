// Add-one-in and leave-one-out effects, their Holm correction, and the interaction contrast.
#include "server/stats/decomposition.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>

#include "server/stats/holm.h"
#include "common/stats/sample_stats.h"

namespace ablate {
namespace {

void FillHolm(MetricDecomposition* d) {
  std::vector<double> p;
  std::vector<MetricComparison*> tested;
  for (auto* side : {&d->add_one_in, &d->leave_one_out}) {
    for (MetricComparison& c : *side) {
      if (!c.welch) continue;
      p.push_back(c.welch->p_value);
      tested.push_back(&c);
    }
  }
  const std::vector<double> adjusted = HolmAdjust(p);
  for (size_t i = 0; i < tested.size(); ++i) tested[i]->welch_p_holm = adjusted[i];
}

void FillInteraction(const DecompositionRuns& runs, MetricDecomposition* d) {
  const size_t k = runs.add_one_in.size();
  std::vector<std::vector<double>> values;  // kept alive for the terms' spans
  values.push_back(MetricValues(runs.to, d->metric));
  values.push_back(MetricValues(runs.from, d->metric));
  for (std::span<const RunOutcome> r : runs.add_one_in) values.push_back(MetricValues(r, d->metric));
  if (!values[0].empty() && !values[1].empty()) {
    d->total = SampleMean(values[0]) - SampleMean(values[1]);
  }
  double sum = 0.0;
  bool all = true;
  for (const MetricComparison& c : d->add_one_in) {
    if (c.difference) sum += *c.difference;
    all = all && c.difference.has_value();
  }
  if (all) d->sum_of_singles = sum;
  d->interaction_underpowered = false;
  for (const std::vector<double>& v : values) {
    if (v.size() < static_cast<size_t>(kMinRunsToTell)) d->interaction_underpowered = true;
  }
  if (k < 2) return;
  std::vector<ContrastTerm> terms = {{1.0, values[0]}, {static_cast<double>(k) - 1.0, values[1]}};
  for (size_t c = 0; c < k; ++c) terms.push_back({-1.0, values[2 + c]});
  d->interaction = LinearContrast(terms);
}

}  // namespace

std::optional<TTestResult> LinearContrast(const std::vector<ContrastTerm>& terms) {
  double estimate = 0.0, se2 = 0.0, df_denominator = 0.0, n_total = 0.0;
  for (const ContrastTerm& t : terms) {
    if (t.values.size() < 2) return std::nullopt;
    const double n = static_cast<double>(t.values.size());
    const double q = t.weight * t.weight * SampleVariance(t.values) / n;
    estimate += t.weight * SampleMean(t.values);
    se2 += q;
    df_denominator += q * q / (n - 1.0);
    n_total += n;
  }
  TTestResult r;
  r.difference = estimate;
  if (se2 == 0.0) {  // no noise: the sign decides (t_tests.h)
    r.df = n_total - static_cast<double>(terms.size());
    if (estimate != 0.0) {
      r.t = estimate > 0 ? std::numeric_limits<double>::infinity()
                         : -std::numeric_limits<double>::infinity();
      r.p_value = 0.0;
    }
    return r;
  }
  const double se = std::sqrt(se2);
  r.df = se2 * se2 / df_denominator;
  r.t = estimate / se;
  const boost::math::students_t dist(r.df);
  r.p_value = std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(dist, std::fabs(r.t))));
  r.ci_half_width = StudentTCritical(r.df) * se;
  return r;
}

std::vector<MetricDecomposition> Decompose(const DecompositionRuns& runs) {
  std::vector<MetricDecomposition> out;
  for (Metric m : {Metric::kTimeToTarget, Metric::kStepsToTarget, Metric::kMsPerStep}) {
    MetricDecomposition d;
    d.metric = m;
    for (size_t c = 0; c < runs.add_one_in.size(); ++c) {
      d.add_one_in.push_back(CompareMetric(runs.add_one_in[c], runs.from, m));
      d.leave_one_out.push_back(CompareMetric(runs.to, runs.leave_one_out[c], m));
    }
    FillHolm(&d);
    FillInteraction(runs, &d);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ablate
