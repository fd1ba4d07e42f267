// Min/max downsampling: point budget per series, spikes kept, short curves untouched.
#include "server/store/downsample.h"

#include <algorithm>
#include <cmath>

#include "gtest/gtest.h"

namespace ablate {
namespace {

std::vector<MetricPoint> Curve(int n) {
  std::vector<MetricPoint> points;
  for (int i = 0; i < n; ++i) {
    MetricPoint p;
    p.step = i;
    p.train_loss = 10.0 * std::exp(-i / 500.0) + 0.01 * std::sin(i);
    p.lr = 0.05;
    p.step_ms = 100.0 + (i % 7);
    p.train_time_ms = 100.0 * i;
    p.tokens = int64_t{524288} * i;
    if (i % 125 == 0) p.val_loss = 9.0 * std::exp(-i / 600.0);
    points.push_back(p);
  }
  return points;
}

int CountSeries(const std::vector<MetricPoint>& points, std::optional<double> MetricPoint::*f) {
  return static_cast<int>(std::count_if(points.begin(), points.end(),
                                        [&](const MetricPoint& p) { return (p.*f).has_value(); }));
}

TEST(MinMaxIndicesTest, KeepsEverythingWhenShort) {
  std::vector<double> values = {3, 1, 2};
  EXPECT_EQ(MinMaxIndices(values, 10), (std::vector<size_t>{0, 1, 2}));
}

TEST(MinMaxIndicesTest, KeepsMinAndMaxOfEachBucketInOrder) {
  std::vector<double> values = {5, 1, 9, 4, 4, 2, 8, 3};
  // 2 buckets of 4: [5,1,9,4] -> 1@1, 9@2; [4,2,8,3] -> 2@5, 8@6.
  EXPECT_EQ(MinMaxIndices(values, 4), (std::vector<size_t>{1, 2, 5, 6}));
}

TEST(DownsampleTest, ShortCurveIsReturnedWhole) {
  std::vector<MetricPoint> points = Curve(100);
  absl::StatusOr<std::vector<MetricPoint>> out = DownsampleMinMax(points, 200);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 100u);
  EXPECT_EQ(out->back().step, 99);
}

TEST(DownsampleTest, EachSeriesWithinBudgetAndSpikesSurvive) {
  std::vector<MetricPoint> points = Curve(10000);
  points[4321].train_loss = 50.0;  // a loss spike
  points[777].step_ms = 5000.0;    // a slow step
  points[9000].train_loss = -1.0;  // an impossible dip, still the bucket minimum
  for (int max_points : {2, 10, 100, 999, 2000}) {
    absl::StatusOr<std::vector<MetricPoint>> out = DownsampleMinMax(points, max_points);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LE(CountSeries(*out, &MetricPoint::train_loss), max_points);
    EXPECT_LE(CountSeries(*out, &MetricPoint::step_ms), max_points);
    EXPECT_LE(CountSeries(*out, &MetricPoint::lr), max_points);
    EXPECT_LE(CountSeries(*out, &MetricPoint::val_loss), max_points);
    double max_loss = -1e9, min_loss = 1e9, max_step_ms = 0;
    for (const MetricPoint& p : *out) {
      if (p.train_loss) max_loss = std::max(max_loss, *p.train_loss);
      if (p.train_loss) min_loss = std::min(min_loss, *p.train_loss);
      if (p.step_ms) max_step_ms = std::max(max_step_ms, *p.step_ms);
      EXPECT_TRUE(p.train_time_ms.has_value()) << "x axes ride along on every point";
    }
    EXPECT_EQ(max_loss, 50.0) << max_points;
    EXPECT_EQ(min_loss, -1.0) << max_points;
    EXPECT_EQ(max_step_ms, 5000.0) << max_points;
    EXPECT_TRUE(std::is_sorted(out->begin(), out->end(),
                               [](const auto& a, const auto& b) { return a.step < b.step; }));
  }
}

TEST(DownsampleTest, SparseValidationSeriesKeptWhole) {
  std::vector<MetricPoint> points = Curve(3000);  // 24 validations
  absl::StatusOr<std::vector<MetricPoint>> out = DownsampleMinMax(points, 100);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(CountSeries(*out, &MetricPoint::val_loss), 24);
}

TEST(DownsampleTest, RejectsBadBudgets) {
  std::vector<MetricPoint> points = Curve(10);
  EXPECT_EQ(DownsampleMinMax(points, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DownsampleMinMax(points, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(DownsampleMinMax(points, 0).ok());  // the default budget
}

}  // namespace
}  // namespace ablate
