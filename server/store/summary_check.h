// What a run's stored points support of the summary its worker claimed, in one pass over the
// points: a run's summary is never taken on the worker's word (issue 24).
#ifndef ABLATE_SERVER_STORE_SUMMARY_CHECK_H_
#define ABLATE_SERVER_STORE_SUMMARY_CHECK_H_

#include <cstdint>
#include <limits>
#include <optional>

#include "server/core/model.h"

namespace ablate {

// Fed the run's curve point by point in increasing step order (one point per step), it keeps
// only a few running figures: a run of 25,000 points is checked without holding them (holding
// them took a quarter of the coordinator's CPU in `ingest_bench`, most of it first touches of
// fresh memory; bench/coordinator/NOTES.md).
//
// Each claim of `claimed` that the points support is kept, the rest replaced by what they say:
// steps at most the last point's step; the final val loss one of the points' (else the last);
// the target reached only at the first val point at or below it, and the time to it only within
// the training times of the points around that step (else that step's own, or the one before);
// training time at most the points' largest; mean step time within the points' range.
class SummaryCheck {
 public:
  SummaryCheck(double target_val_loss, const RunSummary& claimed)
      : target_(target_val_loss), claimed_(claimed) {}

  void Add(const MetricPoint& p);
  RunSummary Result() const;

 private:
  const double target_;
  const RunSummary claimed_;
  bool any_ = false;
  int64_t last_step_ = 0;
  std::optional<double> last_val_, max_train_, min_step_, max_step_;
  bool claimed_val_seen_ = false;
  // The first point at or below the target (looked for only when the target is claimed) and the
  // training times around it: the largest before it, the smallest after it.
  bool reached_ = false;
  int64_t target_step_ = 0;
  std::optional<double> target_train_time_;
  double train_before_ = 0;
  double train_after_ = std::numeric_limits<double>::infinity();
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_SUMMARY_CHECK_H_
