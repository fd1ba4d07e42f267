// CheckMetricBatch and CheckRunResult: the first problem found, in words a worker's log can show.
#include "server/core/worker_input.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace ablate {
namespace {

// Why the value `what` is refused, or "" when it is fine (or absent).
std::string BadNumber(const char* what, std::optional<double> v, bool non_negative) {
  if (!v) return "";
  if (!std::isfinite(*v)) return absl::StrCat(what, " is not finite (", *v, ")");
  if (std::fabs(*v) > kMaxMetricMagnitude) {
    return absl::StrCat(what, " ", *v, " is out of range (|value| <= ", kMaxMetricMagnitude, ")");
  }
  if (non_negative && *v < 0) return absl::StrCat(what, " ", *v, " is negative");
  return "";
}

std::string BadPoint(const MetricPoint& p, std::optional<int64_t> max_step) {
  if (p.step < 0) return absl::StrCat("step ", p.step, " is negative");
  if (max_step && p.step > *max_step) {
    return absl::StrCat("step ", p.step, " is beyond the run's ", *max_step, " configured steps");
  }
  if (p.tokens && *p.tokens < 0) return absl::StrCat("tokens ", *p.tokens, " is negative");
  for (const std::string& bad : {BadNumber("train_loss", p.train_loss, false),
                                 BadNumber("val_loss", p.val_loss, false),
                                 BadNumber("lr", p.lr, false),
                                 BadNumber("step_ms", p.step_ms, true),
                                 BadNumber("train_time_ms", p.train_time_ms, true)}) {
    if (!bad.empty()) return bad;
  }
  return "";
}

std::string BadSummary(const RunSummary& s) {
  if (s.steps < 0) return absl::StrCat("summary steps ", s.steps, " is negative");
  if (s.target_step && *s.target_step < 0) {
    return absl::StrCat("summary target_step ", *s.target_step, " is negative");
  }
  for (const std::string& bad : {BadNumber("summary final_val_loss", s.final_val_loss, false),
                                 BadNumber("summary time_to_target_ms", s.time_to_target_ms, true),
                                 BadNumber("summary mean_step_ms", s.mean_step_ms, true),
                                 BadNumber("summary train_time_ms", s.train_time_ms, true)}) {
    if (!bad.empty()) return bad;
  }
  return "";
}

}  // namespace

absl::Status CheckMetricBatch(const std::vector<MetricPoint>& points,
                              std::optional<int64_t> max_step) {
  if (points.size() > static_cast<size_t>(kMaxPointsPerBatch)) {
    return absl::InvalidArgumentError(absl::StrCat("batch of ", points.size(),
                                                   " points is over the limit of ",
                                                   kMaxPointsPerBatch, " per batch"));
  }
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::string bad = BadPoint(points[i], max_step); !bad.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("point ", i, " (step ", points[i].step,
                                                     "): ", bad));
    }
  }
  return CheckOrder(points);
}

absl::Status CheckOrder(const std::vector<MetricPoint>& points) {
  std::vector<const MetricPoint*> by_step;
  by_step.reserve(points.size());
  for (const MetricPoint& p : points) by_step.push_back(&p);
  std::stable_sort(by_step.begin(), by_step.end(),
                   [](const MetricPoint* a, const MetricPoint* b) { return a->step < b->step; });
  const MetricPoint* timed = nullptr;  // the last point (by step) with a training time
  for (size_t i = 0; i < by_step.size(); ++i) {
    const MetricPoint& p = *by_step[i];
    if (i > 0 && by_step[i - 1]->step == p.step) {
      return absl::InvalidArgumentError(
          absl::StrCat("step ", p.step, " appears twice in the batch"));
    }
    if (!p.train_time_ms) continue;
    if (timed && *p.train_time_ms < *timed->train_time_ms) {
      return absl::InvalidArgumentError(absl::StrCat(
          "train_time_ms goes backwards: step ", p.step, " has ", *p.train_time_ms,
          " after step ", timed->step, " had ", *timed->train_time_ms));
    }
    timed = &p;
  }
  return absl::OkStatus();
}

absl::Status CheckSeq(int64_t seq) {
  if (seq >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("seq ", seq, " is below 1 (seqs start at 1)"));
}

absl::Status CheckResumedFrom(int64_t resumed_from_step, const std::vector<MetricPoint>& points,
                              std::optional<int64_t> max_step) {
  if (resumed_from_step < 1 || (max_step && resumed_from_step > *max_step)) {
    return absl::InvalidArgumentError(
        absl::StrCat("resumed_from_step ", resumed_from_step, " is outside 1..",
                     max_step ? absl::StrCat(*max_step) : std::string("the run's steps")));
  }
  for (const MetricPoint& p : points) {
    if (p.step < resumed_from_step) {
      return absl::InvalidArgumentError(absl::StrCat(
          "point at step ", p.step, " comes before the checkpoint it resumed from (step ",
          resumed_from_step, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRunResult(std::string_view error, std::string_view stderr_tail,
                            const std::optional<RunSummary>& summary) {
  if (stderr_tail.size() > kMaxStderrTailBytes) {
    return absl::InvalidArgumentError(absl::StrCat("stderr tail of ", stderr_tail.size(),
                                                   " bytes is over the limit of ",
                                                   kMaxStderrTailBytes, " bytes"));
  }
  if (error.size() > kMaxErrorBytes) {
    return absl::InvalidArgumentError(absl::StrCat("error of ", error.size(),
                                                   " bytes is over the limit of ",
                                                   kMaxErrorBytes, " bytes"));
  }
  if (summary) {
    if (std::string bad = BadSummary(*summary); !bad.empty()) {
      return absl::InvalidArgumentError(bad);
    }
  }
  return absl::OkStatus();
}

}  // namespace ablate
