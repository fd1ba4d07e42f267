// SweepNews: which polls of a WatchSweep stream are sent. The case that matters: a poll where only
// the sweep's state moved (its last run's count was read a poll before the finished state) must
// be sent, or the stream ends without the client hearing how the sweep ended.
#include <gtest/gtest.h>

#include "server/rpc/watch_streams.h"

namespace ablate {
namespace {

v1::SweepUpdate Update(v1::SweepState state, int succeeded, int total) {
  v1::SweepUpdate u;
  u.mutable_sweep()->set_state(state);
  u.mutable_sweep()->mutable_counts()->set_total(total);
  u.mutable_sweep()->mutable_counts()->set_succeeded(succeeded);
  return u;
}

TEST(SweepNewsTest, TheFirstPollAndEveryMoveAreSentARepeatIsNot) {
  SweepNews news;
  EXPECT_TRUE(news.Take(Update(v1::SWEEP_RUNNING, 0, 4)));
  EXPECT_FALSE(news.Take(Update(v1::SWEEP_RUNNING, 0, 4)));
  EXPECT_TRUE(news.Take(Update(v1::SWEEP_RUNNING, 1, 4)));
  v1::SweepUpdate with_run = Update(v1::SWEEP_RUNNING, 1, 4);
  with_run.add_runs()->set_id(2);
  EXPECT_TRUE(news.Take(with_run));
  EXPECT_FALSE(news.Take(Update(v1::SWEEP_RUNNING, 1, 4)));
}

TEST(SweepNewsTest, TheFinishedStateAloneIsSent) {
  SweepNews news;
  EXPECT_TRUE(news.Take(Update(v1::SWEEP_RUNNING, 3, 4)));
  EXPECT_TRUE(news.Take(Update(v1::SWEEP_RUNNING, 4, 4)));  // the last run's count, state lagging
  EXPECT_TRUE(news.Take(Update(v1::SWEEP_SUCCEEDED, 4, 4)));  // nothing else moved
  EXPECT_FALSE(news.Take(Update(v1::SWEEP_SUCCEEDED, 4, 4)));
}

}  // namespace
}  // namespace ablate
