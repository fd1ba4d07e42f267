// One-way ANOVA on Boost.Math's F distribution, and the confound decision; see confound.h.
#include "server/stats/confound.h"

#include <algorithm>
#include <boost/math/distributions/fisher_f.hpp>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/stats/sample_stats.h"

namespace ablate {
namespace {

std::string Percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * x);
  return buf;
}

std::string PText(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, p < 1e-4 ? "%.1e" : "%.4f", p);
  return buf;
}

std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::optional<AnovaResult> OneWayAnova(const std::vector<std::vector<double>>& groups) {
  std::vector<const std::vector<double>*> used;
  double n_total = 0.0, sum = 0.0;
  for (const std::vector<double>& g : groups) {
    if (g.empty()) continue;
    used.push_back(&g);
    n_total += static_cast<double>(g.size());
    for (double v : g) sum += v;
  }
  const double k = static_cast<double>(used.size());
  if (used.size() < 2 || n_total - k < 1) return std::nullopt;
  const double grand = sum / n_total;
  double between = 0.0, within = 0.0;
  for (const std::vector<double>* g : used) {
    const double mean = SampleMean(*g);
    between += static_cast<double>(g->size()) * (mean - grand) * (mean - grand);
    for (double v : *g) within += (v - mean) * (v - mean);
  }
  AnovaResult r;
  r.df_between = k - 1;
  r.df_within = n_total - k;
  if (within == 0.0) {
    // No noise within groups: any difference between them is real.
    r.f = between > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
    r.p_value = between > 0.0 ? 0.0 : 1.0;
    return r;
  }
  r.f = (between / r.df_between) / (within / r.df_within);
  const boost::math::fisher_f dist(r.df_between, r.df_within);
  r.p_value = boost::math::cdf(boost::math::complement(dist, r.f));
  return r;
}

ConfoundCheck CheckConfound(const std::vector<SameWorkGroup>& groups) {
  ConfoundCheck c;
  std::vector<std::vector<double>> values;
  std::vector<std::string> shown;  // the names as the message gives them
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const SameWorkGroup& g : groups) {
    if (g.ms_per_step.size() < 2) continue;
    c.variants.push_back(g.variant);
    shown.push_back(g.declared ? g.variant + " (declared same work)" : g.variant);
    values.push_back(g.ms_per_step);
    lo = std::min(lo, SampleMean(g.ms_per_step));
    hi = std::max(hi, SampleMean(g.ms_per_step));
  }
  if (values.size() < 2) {
    c.message = "not tested: fewer than 2 variants that do the baseline's work per step have 2 "
                "or more runs with ms/step";
    return c;
  }
  c.test = OneWayAnova(values);
  if (lo > 0) c.relative_spread = (hi - lo) / lo;
  c.confounded = c.test && c.test->p_value < kConfoundAlpha;
  const std::string spread = c.relative_spread ? Percent(*c.relative_spread) : "?";
  const std::string p = c.test ? PText(c.test->p_value) : "?";
  if (c.confounded) {
    c.message = "variants that do identical work per step (" + Names(shown) +
                ") differ in ms/step by up to " + spread + " (one-way ANOVA p = " + p +
                " < 0.01): machine speed changed during the sweep, so time verdicts are "
                "confounded; steps-to-target is the trustworthy measure";
  } else {
    c.message = "variants that do identical work per step (" + Names(shown) +
                ") show no significant difference in ms/step (spread " + spread +
                ", one-way ANOVA p = " + p + " >= 0.01): no clear sign that machine speed "
                "changed during the sweep";
  }
  return c;
}

}  // namespace ablate
