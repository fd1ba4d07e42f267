// Test helper for stats_scipy_live: reads one case per line on stdin and prints server/stats'
// answer on stdout, one line each, with 17 significant digits. Cases ("x..." are numbers):
//   welch A... ; B...    -> t p df difference ci_half_width   (or "none")
//   paired A... ; B...   -> same fields
//   less MU ; X...       -> t p                               (one-sample, alternative less)
//   ci X...              -> n mean ci_half_width              ("n mean" / "n" when undefined)
//   holm P...            -> the adjusted p-values
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "server/stats/holm.h"
#include "server/stats/sample_stats.h"
#include "server/stats/t_tests.h"

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

void Answer(const std::string& kind, const std::string& left, const std::string& right) {
  const std::vector<double> a = Numbers(left), b = Numbers(right);
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
    const size_t semi = rest.find(';');
    ablate::Answer(kind, rest.substr(0, semi),
                   semi == std::string::npos ? "" : rest.substr(semi + 1));
  }
  return 0;
}
