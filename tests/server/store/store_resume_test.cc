// A run's curve across attempts that resumed from checkpoints (issue 17): the earlier attempts'
// points up to the checkpoint's step, then the resumed attempt's, each step once; attempts that
// never reported a point are passed over; the step a new attempt may resume from.
#include <vector>

#include "gtest/gtest.h"
#include "server/store/store.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::AddSweep;
using testing::OpenOrDie;

// Steps [first, last], train loss `base` + step/1000, a val point every 10 steps.
std::vector<MetricPoint> Points(int64_t first, int64_t last, double base) {
  std::vector<MetricPoint> points;
  for (int64_t s = first; s <= last; ++s) {
    MetricPoint p;
    p.step = s;
    p.train_loss = base + 0.001 * static_cast<double>(s);
    p.train_time_ms = 100.0 * static_cast<double>(s);
    if (s % 10 == 0) p.val_loss = base + 0.5;
    points.push_back(p);
  }
  return points;
}

class StoreResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenOrDie(":memory:");
    ASSERT_NE(store_, nullptr);
    int64_t sweep = AddSweep(*store_, "resume", {}, 1);
    RunFilter filter;
    filter.sweep_id = sweep;
    run_ = store_->ListRuns(filter).value()[0].id;
  }

  // A new attempt (the previous one, if any, lost first).
  Attempt Next() {
    if (current_.id != 0) {
      EXPECT_TRUE(store_->LoseAttempt(current_.id).ok());
    }
    current_ = store_->CreateAttempt(run_, "w").value();
    seq_ = 0;
    return current_;
  }
  void Append(const std::vector<MetricPoint>& points,
              std::optional<int64_t> resumed = std::nullopt) {
    ASSERT_TRUE(store_->AppendMetrics(run_, current_.id, current_.fencing_token, ++seq_, points,
                                      resumed)
                    .ok());
  }
  std::vector<MetricPoint> Curve(int64_t after = INT64_MIN) {
    return store_->ListMetricPoints(run_, after, 0).value();
  }
  // Which attempt a point came from: the integer part of its train loss (the `base` given).
  static std::vector<int> Sources(const std::vector<MetricPoint>& points) {
    std::vector<int> out;
    for (const MetricPoint& p : points) out.push_back(static_cast<int>(*p.train_loss));
    return out;
  }
  static void ExpectEveryStepOnce(const std::vector<MetricPoint>& points, int64_t last) {
    ASSERT_EQ(points.size(), static_cast<size_t>(last + 1));
    for (int64_t s = 0; s <= last; ++s) EXPECT_EQ(points[size_t(s)].step, s);
  }

  std::unique_ptr<Store> store_;
  int64_t run_ = 0;
  Attempt current_;
  int64_t seq_ = 0;
};

TEST_F(StoreResumeTest, AResumedAttemptContinuesTheEarlierCurve) {
  Next();
  Append(Points(0, 35, 1));  // checkpoint at 30; points up to 35 before the worker was lost
  Attempt b = Next();
  EXPECT_TRUE(Curve().empty()) << "until its first points say where it resumed";
  Append(Points(31, 40, 2), 30);
  std::vector<MetricPoint> curve = Curve();
  ExpectEveryStepOnce(curve, 40);
  std::vector<int> want(31, 1);
  want.insert(want.end(), 10, 2);
  EXPECT_EQ(Sources(curve), want);
  EXPECT_EQ(store_->GetAttempt(b.id).value().resumed_from_step, 30);
  MetricCurve chart = store_->GetMetrics(run_, 0).value();
  EXPECT_EQ(chart.attempt_id, b.id);
  EXPECT_EQ(chart.total_points, 41);
  // Streaming readers go on after the last step they have.
  Append(Points(41, 45, 2), 30);
  std::vector<MetricPoint> tail = Curve(40);
  ASSERT_EQ(tail.size(), 5u);
  EXPECT_EQ(tail.front().step, 41);
  std::vector<MetricPoint> around = Curve(28);
  ASSERT_EQ(around.size(), 17u);
  EXPECT_EQ(Sources(around)[1], 1) << "step 30 is the first attempt's";
  EXPECT_EQ(Sources(around)[2], 2) << "step 31 the resumed one's";
  EXPECT_EQ(store_->ListMetricPoints(run_, 28, 4).value().size(), 4u) << "limit across attempts";
}

TEST_F(StoreResumeTest, ChainsOfResumesAndPointlessAttempts) {
  Next();
  Append(Points(0, 35, 1));
  Next();
  Append(Points(31, 38, 2), 30);
  Next();  // lost before its first point: passed over
  EXPECT_EQ(store_->ResumeLimit(run_).value(), 37) << "the second attempt's last step, less one";
  Next();
  Append(Points(36, 50, 4), 35);
  std::vector<MetricPoint> curve = Curve();
  ExpectEveryStepOnce(curve, 50);
  std::vector<int> want(31, 1);
  want.insert(want.end(), 5, 2);
  want.insert(want.end(), 15, 4);
  EXPECT_EQ(Sources(curve), want);
}

TEST_F(StoreResumeTest, AnAttemptThatStartedAgainShowsOnlyItsOwnPoints) {
  Next();
  Append(Points(0, 35, 1));
  Next();
  Append(Points(0, 12, 2));
  std::vector<MetricPoint> curve = Curve();
  ExpectEveryStepOnce(curve, 12);
  EXPECT_EQ(Sources(curve), std::vector<int>(13, 2));
}

TEST_F(StoreResumeTest, AStepReportedByBothAttemptsIsMerged) {
  // Stopped at 25 (SIGTERM): the checkpoint there has not run step 25's validation yet (due every
  // 5 here), so the resumed trainer runs it and reports a val-only point at 25.
  Next();
  Append(Points(0, 25, 1));
  Next();
  MetricPoint val25;
  val25.step = 25;
  val25.val_loss = 2.75;
  std::vector<MetricPoint> points = {val25};
  for (const MetricPoint& p : Points(26, 30, 2)) points.push_back(p);
  Append(points, 25);
  std::vector<MetricPoint> curve = Curve();
  ExpectEveryStepOnce(curve, 30);
  EXPECT_DOUBLE_EQ(*curve[25].train_loss, 1.025) << "the first attempt's train point";
  EXPECT_DOUBLE_EQ(*curve[25].val_loss, 2.75) << "the resumed attempt's validation";
}

TEST_F(StoreResumeTest, AStepSplitAcrossBatchesKeepsBothHalves) {
  Next();
  MetricPoint train, val;
  train.step = val.step = 5;
  train.train_loss = 4.0;
  val.val_loss = 4.5;
  Append({train});
  Append({val});
  std::vector<MetricPoint> curve = Curve();
  ASSERT_EQ(curve.size(), 1u);
  EXPECT_EQ(curve[0].train_loss, 4.0);
  EXPECT_EQ(curve[0].val_loss, 4.5);
}

TEST_F(StoreResumeTest, ResumeLimitIsTheLastCompleteStep) {
  EXPECT_EQ(store_->ResumeLimit(run_).value(), 0) << "never ran";
  Next();
  EXPECT_EQ(store_->ResumeLimit(run_).value(), 0) << "no points yet";
  Append(Points(0, 20, 1));
  EXPECT_EQ(store_->ResumeLimit(run_).value(), 20) << "its val point is there";
  Append(Points(21, 23, 1));
  EXPECT_EQ(store_->ResumeLimit(run_).value(), 22) << "step 23's validation may be missing";
  Next();
  Append(Points(0, 3, 2));  // started again from step 0
  EXPECT_EQ(store_->ResumeLimit(run_).value(), 2);
  EXPECT_EQ(store_->ResumeLimit(999).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ablate
