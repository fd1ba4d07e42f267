// Metrics: idempotent batches, stale attempts refused, downsampled curves, raw streaming reads.
#include <algorithm>

#include "gtest/gtest.h"
#include "server/store/store.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::AddSweep;
using testing::OpenOrDie;

std::vector<MetricPoint> Steps(int64_t first, int64_t count, double loss = 5.0) {
  std::vector<MetricPoint> points;
  for (int64_t s = first; s < first + count; ++s) {
    MetricPoint p;
    p.step = s;
    p.train_loss = loss - 0.001 * static_cast<double>(s);
    p.lr = 0.05;
    p.step_ms = 120.0;
    p.train_time_ms = 120.0 * static_cast<double>(s);
    p.tokens = 524288 * s;
    if (s % 125 == 0) p.val_loss = loss - 0.001 * static_cast<double>(s) + 0.1;
    points.push_back(p);
  }
  return points;
}

class StoreMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenOrDie(":memory:");
    ASSERT_NE(store_, nullptr);
    int64_t sweep = AddSweep(*store_, "metrics", {}, 1);
    RunFilter filter;
    filter.sweep_id = sweep;
    run_id_ = store_->ListRuns(filter).value()[0].id;
    attempt_ = store_->CreateAttempt(run_id_, "w").value();
  }
  absl::StatusOr<bool> Append(int64_t seq, const std::vector<MetricPoint>& points) {
    return store_->AppendMetrics(run_id_, attempt_.id, attempt_.fencing_token, seq, points);
  }

  std::unique_ptr<Store> store_;
  int64_t run_id_ = 0;
  Attempt attempt_;
};

TEST_F(StoreMetricsTest, BatchesAreIdempotentBySequenceNumber) {
  EXPECT_EQ(Append(0, Steps(0, 100)).value(), false);
  EXPECT_EQ(Append(1, Steps(100, 100)).value(), false);
  // The worker reconnects and resends both from its outbox; one with different content.
  EXPECT_EQ(Append(0, Steps(0, 100)).value(), true);
  EXPECT_EQ(Append(1, Steps(100, 50, 99.0)).value(), true);
  MetricCurve curve = store_->GetMetrics(run_id_, 0).value();
  EXPECT_EQ(curve.total_points, 200);
  EXPECT_EQ(curve.attempt_id, attempt_.id);
  ASSERT_EQ(curve.points.size(), 200u);
  EXPECT_DOUBLE_EQ(*curve.points[150].train_loss, 5.0 - 0.150) << "duplicate ignored";
  EXPECT_DOUBLE_EQ(*curve.points[125].val_loss, 5.0 - 0.125 + 0.1);
  EXPECT_EQ(curve.points[199].tokens, 524288 * 199);
  EXPECT_FALSE(curve.points[1].val_loss.has_value());
}

TEST_F(StoreMetricsTest, WrongRunOrUnknownAttemptIsRefused) {
  EXPECT_EQ(store_->AppendMetrics(run_id_ + 1, attempt_.id, attempt_.fencing_token, 0, Steps(0, 1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->AppendMetrics(run_id_, 999, 1, 0, Steps(0, 1)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetMetrics(999, 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetMetrics(run_id_, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreMetricsTest, CurveIsDownsampledWithinBoundsKeepingSpikes) {
  std::vector<MetricPoint> points = Steps(0, 5000);
  points[2500].train_loss = 42.0;  // a loss spike must survive downsampling
  points[4000].step_ms = 900.0;    // and so must a slow step
  for (int seq = 0; seq < 10; ++seq) {
    std::vector<MetricPoint> batch(points.begin() + seq * 500, points.begin() + (seq + 1) * 500);
    ASSERT_FALSE(Append(seq, batch).value());
  }
  for (int max_points : {2, 50, 300, 2000}) {
    MetricCurve curve = store_->GetMetrics(run_id_, max_points).value();
    EXPECT_EQ(curve.total_points, 5000);
    auto count = [&](std::optional<double> MetricPoint::*f) {
      return std::count_if(curve.points.begin(), curve.points.end(),
                           [&](const MetricPoint& p) { return (p.*f).has_value(); });
    };
    EXPECT_LE(count(&MetricPoint::train_loss), max_points);
    EXPECT_LE(count(&MetricPoint::step_ms), max_points);
    EXPECT_LE(count(&MetricPoint::lr), max_points);
    EXPECT_LE(count(&MetricPoint::val_loss), max_points);
    double max_loss = 0, min_loss = 1e9, max_step = 0;
    for (const MetricPoint& p : curve.points) {
      if (p.train_loss) max_loss = std::max(max_loss, *p.train_loss);
      if (p.train_loss) min_loss = std::min(min_loss, *p.train_loss);
      if (p.step_ms) max_step = std::max(max_step, *p.step_ms);
    }
    EXPECT_EQ(max_loss, 42.0) << max_points;
    EXPECT_DOUBLE_EQ(min_loss, 5.0 - 0.001 * 4999) << max_points;
    EXPECT_EQ(max_step, 900.0) << max_points;
  }
}

TEST_F(StoreMetricsTest, NewAttemptStartsANewCurve) {
  ASSERT_FALSE(Append(0, Steps(0, 30)).value());
  ASSERT_TRUE(store_->LoseAttempt(attempt_.id).ok());
  // While requeued, the curve is the last attempt's.
  EXPECT_EQ(store_->GetMetrics(run_id_, 0).value().total_points, 30);
  Attempt old = attempt_;
  attempt_ = store_->CreateAttempt(run_id_, "w2").value();
  EXPECT_EQ(store_->GetMetrics(run_id_, 0).value().total_points, 0);
  ASSERT_FALSE(Append(0, Steps(0, 10)).value()) << "seq restarts per attempt";
  MetricCurve curve = store_->GetMetrics(run_id_, 0).value();
  EXPECT_EQ(curve.attempt_id, attempt_.id);
  EXPECT_EQ(curve.total_points, 10);
  EXPECT_EQ(
      store_->AppendMetrics(run_id_, old.id, old.fencing_token, 1, Steps(30, 1)).status().code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST_F(StoreMetricsTest, ListMetricPointsStreamsAfterAStep) {
  ASSERT_FALSE(Append(0, Steps(0, 100)).value());
  std::vector<MetricPoint> tail = store_->ListMetricPoints(run_id_, 89, 0).value();
  ASSERT_EQ(tail.size(), 10u);
  EXPECT_EQ(tail.front().step, 90);
  EXPECT_EQ(store_->ListMetricPoints(run_id_, -1, 5).value().size(), 5u);
}

TEST_F(StoreMetricsTest, UpdateRunSummaryStoresOptionalFields) {
  RunSummary s;
  s.final_val_loss = 3.31;
  s.steps = 200;
  ASSERT_TRUE(store_->UpdateRunSummary(run_id_, s).ok());
  ablate::Run run = store_->GetRun(run_id_).value();
  EXPECT_EQ(run.summary.final_val_loss, 3.31);
  EXPECT_FALSE(run.summary.time_to_target_ms.has_value());
  EXPECT_FALSE(run.summary.reached_target);
  EXPECT_EQ(run.summary.steps, 200);
}

}  // namespace
}  // namespace ablate
