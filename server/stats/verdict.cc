// Verdict rules and the method paragraph; see verdict.h.
#include "server/stats/verdict.h"

#include <array>
#include <cstdio>

namespace ablate {
namespace {

bool IsSignificant(const std::string& verdict) {
  return verdict == "faster" || verdict == "slower" || verdict == "better" || verdict == "worse";
}

}  // namespace

std::string MetricVerdict(const MetricComparison& c, Metric metric, const VariantStats& variant) {
  const bool needs_target = metric == Metric::kTimeToTarget || metric == Metric::kStepsToTarget;
  if (needs_target && variant.n > 0 && variant.n_reached == 0) return "never reached";
  if (c.n_variant == 0 || c.n_baseline == 0 || !c.difference) return "no data";
  if (c.underpowered) return "underpowered";
  if (c.welch_p_holm && *c.welch_p_holm < kVerdictAlpha && *c.difference != 0.0) {
    return DirectionWord(metric, *c.difference < 0);
  }
  return "no difference";
}

std::string DirectionWord(Metric metric, bool lower) {
  switch (metric) {
    case Metric::kTimeToTarget:
      return lower ? "faster" : "slower";
    case Metric::kStepsToTarget:
      return lower ? "fewer steps" : "more steps";
    case Metric::kMsPerStep:
      return lower ? "faster steps" : "slower steps";
    case Metric::kFinalValLoss:
      break;
  }
  return lower ? "better" : "worse";
}

std::string ConfoundedVerdict(const std::string& steps_verdict, const std::string& loss_verdict) {
  std::string out = std::string(kConfoundedWord) + "; steps: " + steps_verdict;
  if (IsSignificant(loss_verdict)) out += ", " + loss_verdict;
  return out;
}

std::string CombinedVerdict(const std::string& time_verdict, const std::string& loss_verdict) {
  const bool time_sig = IsSignificant(time_verdict);
  const bool loss_sig = IsSignificant(loss_verdict);
  if (time_sig && loss_sig) return time_verdict + ", " + loss_verdict;
  if (time_sig) return time_verdict;
  if (loss_sig) return loss_verdict;
  constexpr std::array<const char*, 3> kCautiousFirst = {"never reached", "underpowered",
                                                         "no difference"};
  for (const char* v : kCautiousFirst) {
    if (time_verdict == v || loss_verdict == v) return v;
  }
  return "no data";
}

std::string ComparisonMethodText(double target) {
  char t[32];
  std::snprintf(t, sizeof t, "%.4g", target);
  const std::string target_text = t;
  return "Each variant's finished (succeeded) runs are summarised by their final val loss (nats) "
         "and their time to target: the training time at the first validation with loss <= " +
         target_text +
         ". A run that never reached the target has only a lower bound on that time (its whole "
         "training time), so it is neither averaged in as if it had reached nor dropped: it "
         "counts in n and not in reached, its final val loss enters the loss statistics, and "
         "the time statistics (mean, 95% Student-t CI, tests) use only the runs that reached; "
         "read them beside reached/n. Each ablation is compared with the baseline by Welch's "
         "t-test (two-sided), with the paired t-test as well when both have the same seeds one "
         "to one; Welch p-values are Holm-corrected across the sweep's ablations, per metric. "
         "A comparison with fewer than " +
         std::to_string(kMinRunsToTell) +
         " values on either side is underpowered and gets no faster/slower or better/worse "
         "verdict; \"never reached\" means none of the variant's runs reached the target. "
         "Verdicts use Holm-corrected p < 0.05. The record rule is the speedrun's: a one-sided "
         "one-sample t-test that the mean final val loss is below the target, p < 0.01. "
         "Time to target is steps to target (the step of that first validation) times ms per "
         "step; both are compared the same way, so a faster variant shows whether it needs fewer "
         "steps or takes quicker ones. Runs go out in blocks (block k = seed k of every variant, "
         "shuffled per block), so drift in machine speed falls on every variant alike. Variants "
         "that do the same work per step (they differ only in knobs such as learning rates, eps "
         "or the attention scale) must have the same ms/step; when a one-way ANOVA says their "
         "ms/step differ (p < 0.01), the machine's speed changed during the sweep and every time "
         "verdict is reported as confounded, with the steps verdict beside it.";
}

}  // namespace ablate
