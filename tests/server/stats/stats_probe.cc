// Test helper for stats_scipy_live: reads one case per line on stdin and prints server/stats'
// answer on stdout, one line each, with 17 significant digits. Cases ("x..." are numbers):
//   welch A... ; B...    -> t p df difference ci_half_width   (or "none")
//   paired A... ; B...   -> same fields
//   less MU ; X...       -> t p                               (one-sample, alternative less)
//   ci X...              -> n mean ci_half_width              ("n mean" / "n" when undefined)
//   holm P...            -> the adjusted p-values
//   variant F R T ...    -> runs as (final loss, reached 0/1, time ms) triples; prints
//                           n n_reached, then n mean ci_half_width of the loss and of the time
//                           (nan where undefined)
//   cmptime A... ; B...  -> CompareMetric on time to target of two such run lists: the Welch
//                           fields as for welch (or "none")
//   split A... ; B...    -> runs as (final loss, reached 0/1, time ms, steps, ms/step) quintuples:
//                           n mean ci_half_width of A's steps to target and of A's ms/step, then
//                           the Welch fields of steps and of ms/step, A against B (5 nan each
//                           where there is no test)
//   anova G... ; G... ;  -> one-way ANOVA over the groups: F p df_between df_within ("none")
//   contrast W X... ; W X... ; ...
//                        -> LinearContrast, each group a weight then its values: t p df
//                           estimate ci_half_width ("none")
//   decomp K ; FROM... ; TO... ; ADD_1... ; ... ; ADD_K... ; DROP_1... ; ... ; DROP_K...
//                        -> Decompose on time to target (every run reached; steps = time/100,
//                           ms/step 100): per change, add-one-in difference ci_half_width p
//                           p_holm then the same for leave-one-out; then the interaction's
//                           estimate ci_half_width p, total and sum_of_singles (nan: none)
//   power N D            -> TwoSampleTPower(N, D)
//   seeds D              -> SeedsForPower(D) ("none")
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/plan_power.h"
#include "server/stats/confound.h"
#include "server/stats/decomposition.h"
#include "server/stats/holm.h"
#include "common/stats/sample_stats.h"
#include "common/stats/t_tests.h"
#include "server/stats/variant_stats.h"

namespace ablate {
namespace {

std::vector<double> Numbers(const std::string& text) {
  std::istringstream in(text);
  std::vector<double> out;
  for (double v; in >> v;) out.push_back(v);
  return out;
}

void PrintAll(const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) std::printf(i ? " %.17g" : "%.17g", values[i]);
  std::printf("\n");
}

void PrintTest(const std::optional<TTestResult>& r) {
  if (!r) return (void)std::printf("none\n");
  PrintAll({r->t, r->p_value, r->df, r->difference, r->ci_half_width});
}

std::vector<RunOutcome> Outcomes(const std::vector<double>& triples) {
  std::vector<RunOutcome> runs;
  for (size_t i = 0; i + 2 < triples.size(); i += 3) {
    RunOutcome r;
    r.seed = static_cast<int>(i / 3);
    r.final_val_loss = triples[i];
    r.reached_target = triples[i + 1] != 0;
    r.time_to_target_ms = triples[i + 2];  // ignored unless reached, as for stored runs
    runs.push_back(r);
  }
  return runs;
}

void AppendSample(const SampleStats& s, std::vector<double>& out) {
  const double nan = std::nan("");
  out.insert(out.end(),
             {static_cast<double>(s.n), s.mean.value_or(nan), s.ci_half_width.value_or(nan)});
}

void PrintVariant(const std::vector<double>& triples) {
  const VariantStats s = SummarizeVariant(Outcomes(triples));
  std::vector<double> out = {static_cast<double>(s.n), static_cast<double>(s.n_reached)};
  AppendSample(s.final_val_loss, out);
  AppendSample(s.time_to_target_ms, out);
  PrintAll(out);
}

std::vector<RunOutcome> Quintuples(const std::vector<double>& v) {
  std::vector<RunOutcome> runs;
  for (size_t i = 0; i + 4 < v.size(); i += 5) {
    RunOutcome r;
    r.seed = static_cast<int>(i / 5);
    r.final_val_loss = v[i];
    r.reached_target = v[i + 1] != 0;
    r.time_to_target_ms = v[i + 2];
    r.steps_to_target = v[i + 3];  // ignored unless reached, as for stored runs
    r.mean_step_ms = v[i + 4];
    runs.push_back(r);
  }
  return runs;
}

void AppendTest(const std::optional<TTestResult>& r, std::vector<double>& out) {
  const double nan = std::nan("");
  if (!r) return out.insert(out.end(), 5, nan), void();
  out.insert(out.end(), {r->t, r->p_value, r->df, r->difference, r->ci_half_width});
}

void PrintSplit(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<RunOutcome> va = Quintuples(a), vb = Quintuples(b);
  const VariantStats s = SummarizeVariant(va);
  std::vector<double> out;
  AppendSample(s.steps_to_target, out);
  AppendSample(s.mean_step_ms, out);
  AppendTest(CompareMetric(va, vb, Metric::kStepsToTarget).welch, out);
  AppendTest(CompareMetric(va, vb, Metric::kMsPerStep).welch, out);
  PrintAll(out);
}

void PrintAnova(const std::string& rest) {
  std::vector<std::vector<double>> groups;
  std::istringstream in(rest);
  for (std::string part; std::getline(in, part, ';');) groups.push_back(Numbers(part));
  const std::optional<AnovaResult> r = OneWayAnova(groups);
  if (!r) return (void)std::printf("none\n");
  PrintAll({r->f, r->p_value, r->df_between, r->df_within});
}

std::vector<std::vector<double>> Groups(const std::string& rest) {
  std::vector<std::vector<double>> groups;
  std::istringstream in(rest);
  for (std::string part; std::getline(in, part, ';');) groups.push_back(Numbers(part));
  return groups;
}

void PrintContrast(const std::string& rest) {
  const std::vector<std::vector<double>> groups = Groups(rest);
  std::vector<ContrastTerm> terms;
  for (const std::vector<double>& g : groups) {
    terms.push_back({g.at(0), std::span<const double>(g).subspan(1)});
  }
  PrintTest(LinearContrast(terms));
}

std::vector<RunOutcome> Timed(const std::vector<double>& times) {
  std::vector<RunOutcome> runs;
  for (size_t i = 0; i < times.size(); ++i) {
    RunOutcome r;
    r.seed = static_cast<int>(i);
    r.final_val_loss = 3.27;
    r.reached_target = true;
    r.time_to_target_ms = times[i];
    r.steps_to_target = times[i] / 100;
    r.mean_step_ms = 100;
    runs.push_back(r);
  }
  return runs;
}

void AppendEffect(const MetricComparison& c, std::vector<double>& out) {
  const double nan = std::nan("");
  out.insert(out.end(), {c.difference.value_or(nan), c.welch ? c.welch->ci_half_width : nan,
                         c.welch ? c.welch->p_value : nan, c.welch_p_holm.value_or(nan)});
}

void PrintDecomposition(const std::string& rest) {
  const std::vector<std::vector<double>> groups = Groups(rest);
  const size_t k = static_cast<size_t>(groups.at(0).at(0));
  std::vector<std::vector<RunOutcome>> runs;
  for (size_t i = 1; i < groups.size(); ++i) runs.push_back(Timed(groups[i]));
  DecompositionRuns d{runs.at(0), runs.at(1), {}, {}};
  for (size_t c = 0; c < k; ++c) {
    d.add_one_in.push_back(runs.at(2 + c));
    d.leave_one_out.push_back(runs.at(2 + k + c));
  }
  const MetricDecomposition time = Decompose(d).at(0);
  std::vector<double> out;
  for (size_t c = 0; c < k; ++c) {
    AppendEffect(time.add_one_in[c], out);
    AppendEffect(time.leave_one_out[c], out);
  }
  const double nan = std::nan("");
  const std::optional<TTestResult>& i = time.interaction;
  out.insert(out.end(), {i ? i->difference : nan, i ? i->ci_half_width : nan,
                         i ? i->p_value : nan, time.total.value_or(nan),
                         time.sum_of_singles.value_or(nan)});
  PrintAll(out);
}

void Answer(const std::string& kind, const std::string& left, const std::string& right) {
  const std::vector<double> a = Numbers(left), b = Numbers(right);
  if (kind == "split") return PrintSplit(a, b);
  if (kind == "power") return PrintAll({TwoSampleTPower(static_cast<int>(a.at(0)), a.at(1))});
  if (kind == "seeds") {
    const std::optional<int> n = SeedsForPower(a.at(0));
    return n ? PrintAll({static_cast<double>(*n)}) : (void)std::printf("none\n");
  }
  if (kind == "variant") return PrintVariant(a);
  if (kind == "cmptime") {
    return PrintTest(CompareMetric(Outcomes(a), Outcomes(b), Metric::kTimeToTarget).welch);
  }
  if (kind == "welch") return PrintTest(WelchTest(a, b));
  if (kind == "paired") return PrintTest(PairedTest(a, b));
  if (kind == "holm") return PrintAll(HolmAdjust(a));
  if (kind == "less") {
    const auto r = OneSampleTest(b, a.at(0), Alternative::kLess);
    return r ? PrintAll({r->t, r->p_value}) : (void)std::printf("none\n");
  }
  const SampleStats s = SummarizeSample(a);
  std::vector<double> out = {static_cast<double>(s.n)};
  if (s.mean) out.push_back(*s.mean);
  if (s.ci_half_width) out.push_back(*s.ci_half_width);
  PrintAll(out);
}

}  // namespace
}  // namespace ablate

int main() {
  for (std::string line; std::getline(std::cin, line);) {
    const size_t space = line.find(' ');
    const std::string kind = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (kind == "contrast") {
      ablate::PrintContrast(rest);
      continue;
    }
    if (kind == "decomp") {
      ablate::PrintDecomposition(rest);
      continue;
    }
    if (kind == "anova") {
      ablate::PrintAnova(rest);
      continue;
    }
    const size_t semi = rest.find(';');
    ablate::Answer(kind, rest.substr(0, semi),
                   semi == std::string::npos ? "" : rest.substr(semi + 1));
  }
  return 0;
}
