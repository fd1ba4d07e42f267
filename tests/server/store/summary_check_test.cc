// SummaryCheck against the rule written out plainly over the whole curve (the way the store
// checked summaries before it streamed them), on hand-made cases and on random curves.
#include "server/store/summary_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace ablate {
namespace {

bool SummaryNear(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

// The rule over a whole curve held in memory: the oracle.
RunSummary Reference(const std::vector<MetricPoint>& points, double target,
                     const RunSummary& claimed) {
  RunSummary s;
  if (points.empty()) return s;
  s.steps = std::clamp<int64_t>(claimed.steps, 0, std::max<int64_t>(0, points.back().step));
  std::optional<double> last_val, max_train, min_step, max_step;
  bool seen = false;
  for (const MetricPoint& p : points) {
    if (p.val_loss) {
      last_val = p.val_loss;
      if (claimed.final_val_loss && SummaryNear(*claimed.final_val_loss, *p.val_loss)) seen = true;
    }
    if (p.train_time_ms) max_train = std::max(max_train.value_or(0), *p.train_time_ms);
    if (p.step_ms) {
      min_step = std::min(min_step.value_or(*p.step_ms), *p.step_ms);
      max_step = std::max(max_step.value_or(0), *p.step_ms);
    }
  }
  s.final_val_loss = seen ? claimed.final_val_loss : last_val;
  const MetricPoint* at = nullptr;
  for (const MetricPoint& p : points) {
    if (p.val_loss && *p.val_loss <= target + 1e-9) {
      at = &p;
      break;
    }
  }
  if (at && claimed.reached_target) {
    s.reached_target = true;
    s.target_step = at->step;
    double lo = 0, hi = std::numeric_limits<double>::infinity();
    for (const MetricPoint& p : points) {
      if (!p.train_time_ms) continue;
      if (p.step < at->step) lo = std::max(lo, *p.train_time_ms);
      if (p.step > at->step) hi = std::min(hi, *p.train_time_ms);
    }
    if (at->train_time_ms) {
      lo = std::min(lo, *at->train_time_ms);
      hi = std::max(hi, *at->train_time_ms);
    }
    const auto& claimed_time = claimed.time_to_target_ms;
    if (claimed_time && *claimed_time >= lo - 1e-6 && *claimed_time <= hi + 1e-6) {
      s.time_to_target_ms = claimed_time;
    } else if (at->train_time_ms) {
      s.time_to_target_ms = at->train_time_ms;
    } else if (lo > 0) {
      s.time_to_target_ms = lo;
    }
  }
  if (claimed.train_time_ms && max_train) {
    s.train_time_ms = std::min(*claimed.train_time_ms, *max_train);
  }
  if (claimed.mean_step_ms && min_step) {
    s.mean_step_ms = std::clamp(*claimed.mean_step_ms, *min_step, *max_step);
  } else if (claimed.mean_step_ms && s.train_time_ms) {
    s.mean_step_ms = std::min(*claimed.mean_step_ms, *s.train_time_ms);
  }
  return s;
}

RunSummary Streamed(const std::vector<MetricPoint>& points, double target,
                    const RunSummary& claimed) {
  SummaryCheck check(target, claimed);
  for (const MetricPoint& p : points) check.Add(p);
  return check.Result();
}

void ExpectSame(const RunSummary& want, const RunSummary& got) {
  EXPECT_EQ(want.steps, got.steps);
  EXPECT_EQ(want.final_val_loss, got.final_val_loss);
  EXPECT_EQ(want.reached_target, got.reached_target);
  EXPECT_EQ(want.target_step, got.target_step);
  EXPECT_EQ(want.time_to_target_ms, got.time_to_target_ms);
  EXPECT_EQ(want.train_time_ms, got.train_time_ms);
  EXPECT_EQ(want.mean_step_ms, got.mean_step_ms);
}

// Steps 1..n every `every`, training time 10 ms a step, val loss every 4th step falling by 0.1.
std::vector<MetricPoint> StepCurve(int n) {
  std::vector<MetricPoint> points;
  for (int i = 1; i <= n; ++i) {
    MetricPoint p;
    p.step = i;
    p.train_loss = 5.0 - 0.05 * i;
    p.step_ms = 10;
    p.train_time_ms = 10.0 * i;
    if (i % 4 == 0) p.val_loss = 4.0 - 0.1 * (i / 4);
    points.push_back(p);
  }
  return points;
}

TEST(SummaryCheckTest, NoPointsSupportNothing) {
  RunSummary claimed;
  claimed.steps = 100;
  claimed.final_val_loss = 3.0;
  claimed.reached_target = true;
  claimed.time_to_target_ms = 5;
  const RunSummary got = Streamed({}, 3.28, claimed);
  EXPECT_EQ(got.steps, 0);
  EXPECT_FALSE(got.final_val_loss);
  EXPECT_FALSE(got.reached_target);
  EXPECT_FALSE(got.time_to_target_ms);
}

TEST(SummaryCheckTest, TheTargetIsReachedAtTheFirstValPointAtOrBelowIt) {
  // val 3.3 at step 28, 3.2 at step 32: the target 3.28 is reached at step 32 (320 ms).
  const std::vector<MetricPoint> points = StepCurve(40);
  RunSummary claimed;
  claimed.steps = 40;
  claimed.reached_target = true;
  claimed.target_step = 1;
  claimed.time_to_target_ms = 315;  // between step 31 (310 ms) and step 33 (330 ms): kept
  RunSummary got = Streamed(points, 3.28, claimed);
  EXPECT_TRUE(got.reached_target);
  EXPECT_EQ(got.target_step, 32);
  EXPECT_EQ(got.time_to_target_ms, 315.0);
  claimed.time_to_target_ms = 100;  // outside: the step's own time
  got = Streamed(points, 3.28, claimed);
  EXPECT_EQ(got.time_to_target_ms, 320.0);
  claimed.reached_target = false;  // not claimed: not granted
  got = Streamed(points, 3.28, claimed);
  EXPECT_FALSE(got.reached_target);
  EXPECT_FALSE(got.time_to_target_ms);
}

TEST(SummaryCheckTest, RandomCurvesAgreeWithTheRuleOverTheWholeCurve) {
  std::mt19937_64 rng(20261127);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = static_cast<int>(u(rng) * 60);
    std::vector<MetricPoint> points;
    int64_t step = static_cast<int64_t>(u(rng) * 3);
    double time = 0;
    for (int i = 0; i < n; ++i) {
      step += 1 + static_cast<int64_t>(u(rng) * 3);
      MetricPoint p;
      p.step = step;
      if (u(rng) < 0.9) p.train_loss = 6 * u(rng);
      if (u(rng) < 0.3) p.val_loss = 2.5 + 1.5 * u(rng);
      if (u(rng) < 0.8) p.step_ms = 5 + 20 * u(rng);
      time += 10 * u(rng);
      if (u(rng) < 0.85) p.train_time_ms = time;
      points.push_back(p);
    }
    RunSummary claimed;
    claimed.steps = static_cast<int64_t>(u(rng) * 250) - 20;
    claimed.reached_target = u(rng) < 0.7;
    if (u(rng) < 0.7) claimed.time_to_target_ms = time * u(rng);
    if (u(rng) < 0.5) claimed.target_step = static_cast<int64_t>(u(rng) * 100);
    if (u(rng) < 0.7) claimed.train_time_ms = 1.2 * time * u(rng);
    if (u(rng) < 0.7) claimed.mean_step_ms = 30 * u(rng);
    if (u(rng) < 0.4 && !points.empty()) {
      const MetricPoint& p = points[static_cast<size_t>(u(rng) * static_cast<double>(n))];
      claimed.final_val_loss = p.val_loss ? *p.val_loss : 3.0;
    } else if (u(rng) < 0.5) {
      claimed.final_val_loss = 2 + 2 * u(rng);
    }
    const double target = 2.8 + 0.8 * u(rng);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << ", " << n << " points");
    ExpectSame(Reference(points, target, claimed), Streamed(points, target, claimed));
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace ablate
