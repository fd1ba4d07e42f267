// The record rule on top of the one-sample t-test.
#include "common/stats/record_rule.h"

#include "common/stats/sample_stats.h"

namespace ablate {

RecordRuleResult CheckRecordRule(std::span<const double> final_val_losses, double target,
                                 double alpha) {
  RecordRuleResult r;
  r.n = static_cast<int>(final_val_losses.size());
  if (r.n > 0) r.mean_val_loss = SampleMean(final_val_losses);
  r.test = OneSampleTest(final_val_losses, target, Alternative::kLess);
  r.underpowered = !r.test.has_value();
  r.passes = r.test && r.test->p_value < alpha;
  return r;
}

}  // namespace ablate
