// The speedrun's record rule (reference/modded-nanogpt.md §7): a new record must show, by a
// one-sided one-sample t-test over its runs' final val losses, that the mean is below the target
// (3.28 nats) with p < 0.01 — scipy.stats.ttest_1samp(losses, 3.28, alternative='less').
#ifndef ABLATE_COMMON_STATS_RECORD_RULE_H_
#define ABLATE_COMMON_STATS_RECORD_RULE_H_

#include <optional>
#include <span>

#include "common/stats/t_tests.h"

namespace ablate {

inline constexpr double kRecordTargetValLoss = 3.28;  // nats
inline constexpr double kRecordAlpha = 0.01;

struct RecordRuleResult {
  int n = 0;
  std::optional<double> mean_val_loss;  // nats; empty when n = 0
  std::optional<TTestResult> test;      // alternative = kLess; empty when n < 2
  bool passes = false;                  // test && test->p_value < alpha
  bool underpowered = true;             // n < 2: no test is possible, so it cannot pass
};

// Applies the rule to final val losses (nats). With zero variance, p is 0 when the mean is below
// the target and 1 otherwise (see t_tests.h).
RecordRuleResult CheckRecordRule(std::span<const double> final_val_losses,
                                 double target = kRecordTargetValLoss,
                                 double alpha = kRecordAlpha);

}  // namespace ablate

#endif  // ABLATE_COMMON_STATS_RECORD_RULE_H_
