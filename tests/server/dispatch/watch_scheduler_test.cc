// WatchScheduler: parked watch streams wake when the change feed moves (or closes) or their call
// is cancelled, on the scheduler's pool; the feed's listeners see every change and Close.
#include "server/rpc/watch_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace ablate {
namespace {

using namespace std::chrono_literals;

struct CountingStream : WatchScheduler::Stream {
  void Wake(uint64_t version) override {
    woken_version = version;
    ++wakes;
  }
  bool Cancelled() const override { return cancelled; }
  std::atomic<int> wakes{0};
  std::atomic<uint64_t> woken_version{0};
  std::atomic<bool> cancelled{false};
};

// Waits (up to 10 s) until `done` holds.
template <class F>
bool Eventually(F done) {
  for (int i = 0; i < 1000 && !done(); ++i) std::this_thread::sleep_for(10ms);
  return done();
}

WatchScheduler::Options LongTick() {
  WatchScheduler::Options o;
  o.tick = std::chrono::hours(1);  // nothing wakes for the tick during a test
  o.threads = 2;
  return o;
}

TEST(ChangeFeedListenerTest, SeesEveryNotifyAndTheCloseUntilRemoved) {
  ChangeFeed feed;
  std::vector<bool> calls;
  const int id = feed.AddListener([&](bool closed) { calls.push_back(closed); });
  feed.Notify();
  feed.Notify();
  EXPECT_EQ(calls, (std::vector<bool>{false, false}));
  feed.RemoveListener(id);
  feed.Notify();
  EXPECT_EQ(calls.size(), 2u);
  const int again = feed.AddListener([&](bool closed) { calls.push_back(closed); });
  feed.Close();
  EXPECT_EQ(calls, (std::vector<bool>{false, false, true}));
  feed.RemoveListener(again);
}

TEST(WatchSchedulerTest, ParkedStreamsWakeOnceTheFeedMoves) {
  ChangeFeed feed;
  WatchScheduler scheduler(&feed, LongTick());
  EXPECT_EQ(scheduler.threads(), 3);
  std::vector<CountingStream> streams(50);
  const uint64_t seen = feed.version();
  for (CountingStream& s : streams) scheduler.Park(&s, seen, WatchScheduler::Clock::now());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(scheduler.parked(), streams.size()) << "nothing changed: nobody wakes";
  feed.Notify();
  ASSERT_TRUE(Eventually([&] { return scheduler.parked() == 0; }));
  for (CountingStream& s : streams) {
    ASSERT_TRUE(Eventually([&] { return s.wakes.load() == 1; }));
    EXPECT_EQ(s.woken_version.load(), seen + 1);
  }
}

TEST(WatchSchedulerTest, AStreamParkedAfterAChangeItDidNotSeeWakesWithoutAnother) {
  ChangeFeed feed;
  WatchScheduler scheduler(&feed, LongTick());
  CountingStream s;
  const uint64_t seen = feed.version();
  feed.Notify();  // between the stream's poll and its park
  scheduler.Park(&s, seen, WatchScheduler::Clock::now());
  ASSERT_TRUE(Eventually([&] { return s.wakes.load() == 1; }));
}

TEST(WatchSchedulerTest, NotBeforeItsIntervalUnlessCancelledOrClosed) {
  ChangeFeed feed;
  WatchScheduler scheduler(&feed, LongTick());
  CountingStream late, cancelled, closing;
  const auto far = WatchScheduler::Clock::now() + std::chrono::hours(1);
  scheduler.Park(&late, feed.version(), far);
  scheduler.Park(&cancelled, feed.version(), far);
  feed.Notify();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(scheduler.parked(), 2u) << "moved, but their interval has not passed";
  cancelled.cancelled = true;
  scheduler.Poke();
  ASSERT_TRUE(Eventually([&] { return cancelled.wakes.load() == 1; }));
  EXPECT_EQ(late.wakes.load(), 0);
  scheduler.Park(&closing, feed.version(), far);
  feed.Close();
  ASSERT_TRUE(Eventually([&] { return late.wakes.load() == 1 && closing.wakes.load() == 1; }));
  EXPECT_EQ(scheduler.parked(), 0u);
}

TEST(WatchSchedulerTest, RunNowWakesAtOnceWithTheFeedsVersion) {
  ChangeFeed feed;
  feed.Notify();
  WatchScheduler scheduler(&feed, LongTick());
  CountingStream s;
  scheduler.RunNow(&s);
  ASSERT_TRUE(Eventually([&] { return s.wakes.load() == 1; }));
  EXPECT_EQ(s.woken_version.load(), 1u);
}

}  // namespace
}  // namespace ablate
