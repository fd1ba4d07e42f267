#include "server/store/summary_check.h"

#include <algorithm>
#include <cmath>

namespace ablate {

namespace {

bool Near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

}  // namespace

void SummaryCheck::Add(const MetricPoint& p) {
  any_ = true;
  last_step_ = p.step;
  if (p.val_loss) {
    last_val_ = p.val_loss;
    if (claimed_.final_val_loss && Near(*claimed_.final_val_loss, *p.val_loss)) {
      claimed_val_seen_ = true;
    }
  }
  if (p.train_time_ms) max_train_ = std::max(max_train_.value_or(0), *p.train_time_ms);
  if (p.step_ms) {
    min_step_ = std::min(min_step_.value_or(*p.step_ms), *p.step_ms);
    max_step_ = std::max(max_step_.value_or(0), *p.step_ms);
  }
  if (!claimed_.reached_target) return;
  if (!reached_) {
    if (p.val_loss && *p.val_loss <= target_ + 1e-9) {
      reached_ = true;
      target_step_ = p.step;
      target_train_time_ = p.train_time_ms;
    } else if (p.train_time_ms) {
      train_before_ = std::max(train_before_, *p.train_time_ms);
    }
  } else if (p.train_time_ms) {
    train_after_ = std::min(train_after_, *p.train_time_ms);
  }
}

RunSummary SummaryCheck::Result() const {
  RunSummary s;
  if (!any_) return s;
  s.steps = std::clamp<int64_t>(claimed_.steps, 0, std::max<int64_t>(0, last_step_));
  s.final_val_loss = claimed_val_seen_ ? claimed_.final_val_loss : last_val_;
  if (reached_) {
    s.reached_target = true;
    s.target_step = target_step_;
    double lo = train_before_, hi = train_after_;
    if (target_train_time_) {
      lo = std::min(lo, *target_train_time_);
      hi = std::max(hi, *target_train_time_);
    }
    const std::optional<double>& time = claimed_.time_to_target_ms;
    if (time && *time >= lo - 1e-6 && *time <= hi + 1e-6) {
      s.time_to_target_ms = time;
    } else if (target_train_time_) {
      s.time_to_target_ms = target_train_time_;
    } else if (lo > 0) {
      s.time_to_target_ms = lo;
    }
  }
  if (claimed_.train_time_ms && max_train_) {
    s.train_time_ms = std::min(*claimed_.train_time_ms, *max_train_);
  }
  if (claimed_.mean_step_ms && min_step_) {
    s.mean_step_ms = std::clamp(*claimed_.mean_step_ms, *min_step_, *max_step_);
  } else if (claimed_.mean_step_ms && s.train_time_ms) {
    s.mean_step_ms = std::min(*claimed_.mean_step_ms, *s.train_time_ms);
  }
  return s;
}

}  // namespace ablate
