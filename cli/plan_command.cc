// `ablate plan SWEEP_OR_SPEC --effect 1%`: how many seeds per variant detect that change in time
// to target with 80% power, and what they cost. The coordinator computes it (PlanSweep); this
// file reads the arguments and lays the answer out.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/table.h"

namespace ablate {
namespace {

// "1%" -> 0.01, "0.01" -> 0.01; nullopt for anything else.
std::optional<double> ParseFraction(std::string text) {
  bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size()) return std::nullopt;
    return percent ? v / 100 : v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool IsSweepId(const std::string& arg) {
  return !arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos;
}

std::string Pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", 100 * x);
  return buf;
}

void PrintPlan(const v1::PlanSweepResponse& p) {
  std::cout << "to detect a " << Pct(p.effect()) << " change in mean time to target ("
            << FormatDouble(p.effect_sd(), 2) << " standard deviations) with "
            << FormatDouble(100 * p.power(), 0) << "% power, two-sided t-test at "
            << FormatDouble(p.alpha(), 2) << ":\n";
  if (!p.has_seeds_per_variant()) {
    std::cout << "  more than 10000 seeds per variant would be needed; the change is too small "
                 "for this spread\n";
  } else {
    std::cout << "  " << p.seeds_per_variant() << " seeds per variant (baseline included) x "
              << p.variants() << " variants = " << p.runs() << " runs\n";
  }
  if (p.has_gpu_hours()) {
    std::cout << "  cost: " << p.runs() << " runs x " << FormatDouble(p.run_hours() * 60, 1)
              << " min x " << std::max(1, p.gpus_per_run())
              << (p.gpus_per_run() == 0 ? " CPU slot = " : " GPUs = ")
              << FormatDouble(p.gpu_hours(), 2)
              << (p.gpus_per_run() == 0 ? " CPU slot-hours\n" : " GPU-hours\n");
  } else if (p.has_seeds_per_variant()) {
    std::cout << "  cost: unknown (no finished runs of this baseline to time)\n";
  }
  std::cout << "spread: " << p.basis() << "\n"
            << "Holm's correction across several ablations and runs that miss the target "
               "need somewhat more; a sequential sweep (seeds: {min, max}) stops early when the "
               "answer is clear.\n";
}

}  // namespace

int PlanCommand(Client& c, const std::string& sweep_or_spec, const std::string& effect,
                const std::string& sd) {
  v1::PlanSweepRequest req;
  const std::optional<double> e = ParseFraction(effect);
  if (!e || *e <= 0 || *e >= 1) {
    std::cerr << "ablate: --effect '" << effect << "' must be a change such as 1% or 0.01\n";
    return kExitUsage;
  }
  req.set_effect(*e);
  if (!sd.empty()) {
    const std::optional<double> s = ParseFraction(sd);
    if (!s || *s <= 0) {
      std::cerr << "ablate: --sd '" << sd << "' must be a relative spread such as 0.5% or 0.005\n";
      return kExitUsage;
    }
    req.set_sd_relative(*s);
  }
  if (IsSweepId(sweep_or_spec)) {
    req.set_sweep_id(std::stoll(sweep_or_spec));
  } else {
    std::ifstream in(sweep_or_spec, std::ios::binary);
    if (!in) {
      std::cerr << "ablate: cannot read spec file " << sweep_or_spec
                << " (give a sweep id or a spec file)\n";
      return kExitRejected;
    }
    std::stringstream text;
    text << in.rdbuf();
    req.set_spec_yaml(text.str());
    req.set_file_name(sweep_or_spec);
  }
  v1::PlanSweepResponse resp;
  if (std::optional<int> done =
          c.Call(&Client::Stub::PlanSweep, req, &resp, "planning " + sweep_or_spec)) {
    return *done;
  }
  PrintPlan(resp);
  return kExitOk;
}

}  // namespace ablate
