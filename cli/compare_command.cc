// `ablate compare SWEEP`: per-variant statistics against the baseline as a table, CSV or JSON.
// The numbers and verdicts come from the coordinator (CompareSweep); this file only lays them out.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/csv.h"
#include "cli/decompose_command.h"
#include "cli/table.h"

namespace ablate {
namespace {

enum class Columns { kBoth, kTime, kLoss };

std::string Fixed(double v, int precision) { return FormatDouble(v, precision); }

std::string Signed(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.*f", precision, v);
  return buf;
}

// "3.2791 ± 0.0011" from a summary (values scaled by `scale`), "-" without a mean.
std::string MeanCi(const v1::SampleSummary& s, double scale, int precision) {
  if (!s.has_mean()) return "-";
  std::string out = Fixed(s.mean() * scale, precision);
  if (s.has_ci_low()) out += " ± " + Fixed((s.ci_high() - s.ci_low()) / 2 * scale, precision);
  return out;
}

std::string PValue(double p) { return p < 0.001 ? "<0.001" : Fixed(p, 3); }

std::string DeltaLoss(const v1::MetricDelta& d) {
  if (!d.has_difference()) return "-";
  std::string out = Signed(d.difference(), 4);
  if (d.has_ci_low()) out += " ± " + Fixed((d.ci_high() - d.ci_low()) / 2, 4);
  return out;
}

// The time difference relative to the baseline mean, in percent.
std::string DeltaTimePercent(const v1::MetricDelta& d) {
  if (!d.has_relative()) return "-";
  std::string out = Signed(d.relative() * 100, 1) + "%";
  if (d.has_ci_low() && d.difference() != 0) {
    const double half = (d.ci_high() - d.ci_low()) / 2 * d.relative() / d.difference();
    out += " ± " + Fixed(std::abs(half) * 100, 1) + "%";
  }
  return out;
}

std::string HolmP(const v1::MetricDelta& d) { return d.has_p_holm() ? PValue(d.p_holm()) : "-"; }

bool Significant(const std::string& verdict) {
  return verdict == "fewer steps" || verdict == "more steps" || verdict == "faster steps" ||
         verdict == "slower steps";
}

// Why the time differs: the significant parts of the steps / ms-per-step split ("fewer steps",
// "fewer steps, slower steps"), "-" when neither is.
std::string Why(const v1::VariantComparison& v) {
  std::string out;
  for (const v1::MetricDelta* d : {&v.steps_vs_baseline(), &v.step_ms_vs_baseline()}) {
    if (Significant(d->verdict())) out += (out.empty() ? "" : ", ") + d->verdict();
  }
  return out.empty() ? "-" : out;
}

std::string Verdict(const v1::VariantComparison& v, Columns columns) {
  if (columns == Columns::kTime && v.has_time_vs_baseline()) return v.time_vs_baseline().verdict();
  if (columns == Columns::kLoss && v.has_loss_vs_baseline()) return v.loss_vs_baseline().verdict();
  return v.verdict();
}

std::vector<std::string> Header(Columns columns, double target) {
  std::vector<std::string> h = {"VARIANT", "RUNS", "REACHED"};
  if (columns != Columns::kTime) {
    h.insert(h.end(), {"VAL LOSS (nats)", "Δ LOSS", "p (Holm)"});
  }
  if (columns != Columns::kLoss) {
    h.insert(h.end(), {"TIME TO " + Fixed(target, 2) + " (s)", "Δ TIME", "p (Holm)", "STEPS",
                       "Δ STEPS", "MS/STEP", "Δ MS/STEP", "WHY"});
  }
  h.push_back("VERDICT");
  return h;
}

std::vector<std::string> Row(const v1::VariantComparison& v, Columns columns) {
  std::vector<std::string> row = {v.name(),
                                  std::to_string(v.n()) + "/" + std::to_string(v.counts().total()),
                                  std::to_string(v.n_reached()) + "/" + std::to_string(v.n())};
  if (columns != Columns::kTime) {
    const v1::MetricDelta& d = v.loss_vs_baseline();
    row.insert(row.end(), {MeanCi(v.final_val_loss(), 1, 4), DeltaLoss(d), HolmP(d)});
  }
  if (columns != Columns::kLoss) {
    const v1::MetricDelta& d = v.time_vs_baseline();
    row.insert(row.end(), {MeanCi(v.time_to_target_ms(), 1e-3, 2), DeltaTimePercent(d), HolmP(d),
                           MeanCi(v.steps_to_target(), 1, 0),
                           DeltaTimePercent(v.steps_vs_baseline()), MeanCi(v.mean_step_ms(), 1, 1),
                           DeltaTimePercent(v.step_ms_vs_baseline()), Why(v)});
  }
  row.push_back(Verdict(v, columns));
  return row;
}

// The record rule, one line: which variants pass, fail, or have too few runs.
void PrintRecordRule(const v1::CompareSweepResponse& r) {
  std::string passes, fails, too_few;
  for (const v1::VariantComparison& v : r.variants()) {
    std::string& list = v.record_rule().underpowered() ? too_few
                        : v.record_rule().passes()     ? passes
                                                       : fails;
    list += (list.empty() ? "" : ", ") + v.name();
  }
  std::cout << "record rule (mean val loss < " << Fixed(r.sweep().target_val_loss(), 2)
            << " by a one-sided t-test, p < 0.01): passes: " << (passes.empty() ? "none" : passes)
            << "; fails: " << (fails.empty() ? "none" : fails);
  if (!too_few.empty()) std::cout << "; fewer than 2 runs: " << too_few;
  std::cout << "\n";
}

// Sequential seeds: where each ablation's stopping rule stands.
void PrintSequential(const v1::CompareSweepResponse& r) {
  const v1::Sweep& sw = r.sweep();
  if (sw.seeds_min() == 0) return;
  std::cout << "sequential seeds " << sw.seeds_min() << " to " << sw.seeds()
            << ": a time verdict settles when Welch's p crosses its look's boundary "
               "(server/stats/sequential_rule.h):";
  std::string sep = " ";
  for (const v1::VariantComparison& v : r.variants()) {
    if (!v.has_sequential()) continue;
    const v1::SequentialState& q = v.sequential();
    std::cout << sep << v.name() << " " << q.verdict() << " at " << q.seeds() << " seeds";
    if (q.has_p_value()) std::cout << " (p " << PValue(q.p_value()) << ")";
    sep = "; ";
  }
  std::cout << "\n";
}

// Where the imported rows (compare --with) come from, and whether their times compare.
void PrintImported(const v1::CompareSweepResponse& r) {
  bool first = true;
  for (const v1::VariantComparison& v : r.variants()) {
    if (!v.has_imported()) continue;
    if (first) std::cout << "imported (ran elsewhere, from record logs; ablate import):\n";
    first = false;
    const v1::ImportedVariant& im = v.imported();
    std::cout << "  " << v.name() << ": variant '" << im.variant() << "' of imported sweep "
              << im.sweep_id() << " '" << im.sweep_name() << "', "
              << (im.like_for_like() ? "on this sweep's hardware (" + im.hardware() +
                                           "): times compared"
                                     : im.not_comparable() +
                                           ": only loss and steps compared, times shown as theirs")
              << "\n";
  }
}

// Which nodes and hardware ran the sweep's runs, with counts ("laptop (cpu): 18 runs").
void PrintNodes(const v1::CompareSweepResponse& r) {
  std::map<std::string, int> runs;
  for (const v1::VariantComparison& v : r.variants()) {
    for (const v1::RunPlace& p : v.runs()) {
      if (!p.worker_id().empty()) ++runs[p.worker_id() + " (" + p.hardware() + ")"];
    }
  }
  if (runs.empty()) return;
  std::cout << "ran on:";
  std::string sep = " ";
  for (const auto& [node, n] : runs) {
    std::cout << sep << node << ": " << n << (n == 1 ? " run" : " runs");
    sep = ", ";
  }
  std::cout << " (per run in --json: variants[].runs)\n";
}

void PrintNotes(const v1::CompareSweepResponse& r, Columns columns) {
  const std::string target = Fixed(r.sweep().target_val_loss(), 2);
  std::cout << "\nRUNS: succeeded runs / all runs of the variant (only succeeded runs enter the "
               "statistics). REACHED: runs whose validation loss got to <= "
            << target << ".\n";
  if (columns != Columns::kLoss) {
    std::cout << "Runs that never reached " << target
              << " count in RUNS and in the val loss columns, but not in the time columns: their "
                 "time is only a lower bound.\n";
  }
  std::cout << "± is the 95% Student-t CI; Δ is variant - baseline (negative is better); p is "
               "Welch's two-sided t-test, Holm-corrected across the ablations; fewer than 3 runs "
               "on a side is underpowered.\n";
  if (columns != Columns::kLoss) {
    std::cout << "Time to target = STEPS (the step of the first validation at or below "
              << target
              << ") x MS/STEP; WHY names the part that differs from the baseline (Holm p < "
                 "0.05).\n";
    PrintSequential(r);
    std::cout << "confound check: " << r.confound().message() << "\n";
  }
  PrintNodes(r);
  PrintImported(r);
  if (columns != Columns::kTime) PrintRecordRule(r);
}

void PrintTable(const v1::CompareSweepResponse& r, Columns columns) {
  const v1::Sweep& sw = r.sweep();
  std::cout << "sweep " << sw.id() << " '" << sw.name() << "': " << sw.scale() << " scale, "
            << (sw.gpus_per_run() == 0 ? "cpu" : std::to_string(sw.gpus_per_run()) + " GPUs/run")
            << ", target " << Fixed(sw.target_val_loss(), 2) << " nats, " << sw.counts().total()
            << " runs (" << sw.counts().succeeded() << " succeeded, " << sw.counts().failed()
            << " failed)\n";
  Table t(Header(columns, sw.target_val_loss()));
  for (const v1::VariantComparison& v : r.variants()) t.AddRow(Row(v, columns));
  t.Print(std::cout);
  PrintNotes(r, columns);
}

std::vector<std::string> SummaryCells(const v1::SampleSummary& s) {
  return {CsvNumber(s.has_mean(), s.mean()), CsvNumber(s.has_ci_low(), s.ci_low()),
          CsvNumber(s.has_ci_high(), s.ci_high())};
}

std::vector<std::string> DeltaCells(const v1::MetricDelta& d) {
  return {
      CsvNumber(d.has_difference(), d.difference()),   CsvNumber(d.has_ci_low(), d.ci_low()),
      CsvNumber(d.has_ci_high(), d.ci_high()),         CsvNumber(d.has_relative(), d.relative()),
      CsvNumber(d.has_welch(), d.welch().p_value()),   CsvNumber(d.has_p_holm(), d.p_holm()),
      CsvNumber(d.has_paired(), d.paired().p_value()), CsvText(d.verdict())};
}

constexpr const char* kCompareCsvHeader =
    "variant,index,runs,n,n_reached,"
    "loss_mean,loss_ci_low,loss_ci_high,"
    "loss_diff,loss_diff_ci_low,loss_diff_ci_high,loss_diff_relative,loss_p_welch,loss_p_holm,"
    "loss_p_paired,loss_verdict,"
    "time_mean_ms,time_ci_low_ms,time_ci_high_ms,"
    "time_diff_ms,time_diff_ci_low_ms,time_diff_ci_high_ms,time_diff_relative,time_p_welch,"
    "time_p_holm,time_p_paired,time_verdict,"
    "mean_step_ms,record_rule_p,record_rule_passes,verdict,"
    "steps_mean,steps_ci_low,steps_ci_high,"
    "steps_diff,steps_diff_ci_low,steps_diff_ci_high,steps_diff_relative,steps_p_welch,"
    "steps_p_holm,steps_p_paired,steps_verdict,"
    "step_ms_ci_low,step_ms_ci_high,"
    "step_ms_diff,step_ms_diff_ci_low,step_ms_diff_ci_high,step_ms_diff_relative,step_ms_p_welch,"
    "step_ms_p_holm,step_ms_p_paired,step_ms_verdict,confounded\n";

void PrintCsv(const v1::CompareSweepResponse& r, Columns columns) {
  std::cout << kCompareCsvHeader;
  for (const v1::VariantComparison& v : r.variants()) {
    std::vector<std::string> cells = {CsvText(v.name()), std::to_string(v.index()),
                                      std::to_string(v.counts().total()), std::to_string(v.n()),
                                      std::to_string(v.n_reached())};
    for (const auto& part :
         {SummaryCells(v.final_val_loss()), DeltaCells(v.loss_vs_baseline()),
          SummaryCells(v.time_to_target_ms()), DeltaCells(v.time_vs_baseline())}) {
      cells.insert(cells.end(), part.begin(), part.end());
    }
    const v1::RecordRuleCheck& rule = v.record_rule();
    cells.insert(cells.end(), {CsvNumber(v.mean_step_ms().has_mean(), v.mean_step_ms().mean()),
                               CsvNumber(rule.has_test(), rule.test().p_value()),
                               rule.passes() ? "true" : "false", CsvText(Verdict(v, columns))});
    const std::vector<std::string> steps = SummaryCells(v.steps_to_target());
    const std::vector<std::string> step_ms = SummaryCells(v.mean_step_ms());
    for (const auto& part : {steps, DeltaCells(v.steps_vs_baseline()),
                             std::vector<std::string>(step_ms.begin() + 1, step_ms.end()),
                             DeltaCells(v.step_ms_vs_baseline())}) {
      cells.insert(cells.end(), part.begin(), part.end());
    }
    cells.push_back(r.confound().confounded() ? "true" : "false");
    std::cout << CsvLine(cells);
  }
}

}  // namespace

int CompareCommand(Client& c, int64_t sweep_id, const std::string& metric, bool csv,
                   const std::vector<int64_t>& with) {
  Columns columns;
  if (metric == "both") {
    columns = Columns::kBoth;
  } else if (metric == "time") {
    columns = Columns::kTime;
  } else if (metric == "loss") {
    columns = Columns::kLoss;
  } else {
    std::cerr << "ablate: unknown --metric '" << metric << "'; expected time, loss or both\n";
    return kExitUsage;
  }
  if (csv && c.json()) {
    std::cerr << "ablate: --csv and --json cannot be combined; pick one\n";
    return kExitUsage;
  }
  v1::CompareSweepRequest req;
  req.set_id(sweep_id);
  for (int64_t id : with) req.add_with(id);
  v1::CompareSweepResponse resp;
  if (std::optional<int> done = c.Call(&Client::Stub::CompareSweep, req, &resp,
                                      "comparing sweep " + std::to_string(sweep_id))) {
    return *done;
  }
  if (csv) {
    PrintCsv(resp, columns);
  } else {
    PrintTable(resp, columns);
    if (resp.has_decomposition()) PrintDecomposition(resp.decomposition(), std::cout);
  }
  return kExitOk;
}

}  // namespace ablate
