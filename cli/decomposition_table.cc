// `ablate compare` on a decomposed record: the decomposition table (issue 29). Numbers come
// from the coordinator (CompareSweepResponse.decomposition); this file lays them out.
#include <cstdio>
#include <ostream>
#include <string>

#include "cli/decompose_command.h"
#include "cli/table.h"

namespace ablate {
namespace {

// "-1234.5 ± 56.7" (the CI's half width), "-" without a difference.
std::string Effect(const v1::MetricDelta& d, int precision) {
  if (!d.has_difference()) return "-";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%+.*f", precision, d.difference());
  std::string out = buf;
  if (d.has_ci_low()) out += " ± " + FormatDouble((d.ci_high() - d.ci_low()) / 2, precision);
  return out;
}

std::string Holm(const v1::MetricDelta& d) {
  if (!d.has_p_holm()) return "-";
  return d.p_holm() < 0.001 ? "<0.001" : FormatDouble(d.p_holm(), 3);
}

std::string InteractionLine(const char* what, const char* unit, int precision,
                            const v1::DecompositionInteraction& i) {
  auto num = [&](bool has, double v) {
    if (!has) return std::string("-");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%+.*f", precision, v);
    return std::string(buf);
  };
  std::string out = std::string(what) + ": TO - FROM " + num(i.has_total(), i.total()) +
                    unit + ", sum of the changes alone " +
                    num(i.has_sum_of_singles(), i.sum_of_singles()) + unit + ", interaction " +
                    num(i.has_interaction(), i.interaction());
  if (i.has_ci_low()) {
    out += " ± " + FormatDouble((i.ci_high() - i.ci_low()) / 2, precision);
  }
  out += unit;
  if (i.has_test()) {
    out += " (p " + (i.test().p_value() < 0.001 ? std::string("<0.001")
                                               : FormatDouble(i.test().p_value(), 3)) + ")";
  } else {
    out += " (no test: one change, or a variant with fewer than 2 runs)";
  }
  if (i.underpowered()) out += " [underpowered: a variant has fewer than 3 runs]";
  return out;
}

}  // namespace

void PrintDecomposition(const v1::Decomposition& d, std::ostream& out) {
  out << "\ndecomposition (FROM = baseline, TO = " << d.to_variant()
      << "); negative is faster. alone: (FROM + change) - FROM; left out: TO - (TO - change); "
         "p Holm-corrected per metric\n";
  Table t({"CHANGE", "ALONE TIME ms", "p", "LEFT OUT TIME ms", "p", "ALONE STEPS",
           "ALONE ms/STEP", "LEFT OUT STEPS", "LEFT OUT ms/STEP", "ALONE", "LEFT OUT"});
  for (const v1::DecompositionChange& c : d.changes()) {
    const v1::DecompositionEffect& time = c.time_to_target_ms();
    t.AddRow({c.name(), Effect(time.add_one_in(), 1), Holm(time.add_one_in()),
              Effect(time.leave_one_out(), 1), Holm(time.leave_one_out()),
              Effect(c.steps_to_target().add_one_in(), 1),
              Effect(c.mean_step_ms().add_one_in(), 3),
              Effect(c.steps_to_target().leave_one_out(), 1),
              Effect(c.mean_step_ms().leave_one_out(), 3), time.add_one_in().verdict(),
              time.leave_one_out().verdict()});
  }
  t.Print(out);
  out << InteractionLine("time to target", " ms", 1, d.time_to_target_ms()) << "\n"
      << InteractionLine("steps to target", "", 1, d.steps_to_target()) << "\n"
      << InteractionLine("ms/step", " ms", 3, d.mean_step_ms()) << "\n";
}

}  // namespace ablate
