// The one clock (common/clock.h): the system's two readings keep their meanings, and the manual
// clock moves only when told.
#include "common/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace ablate {
namespace {

TEST(SystemClock, WallIsTheUnixEpochAndMonotonicNeverGoesBack) {
  const SystemClock& clock = SystemClock::Get();
  const int64_t wall = clock.WallMs();
  // After 2025-01-01 and before 2100-01-01: ms since the Unix epoch, not since boot.
  EXPECT_GT(wall, int64_t{1'735'689'600'000});
  EXPECT_LT(wall, int64_t{4'102'444'800'000});
  int64_t last = clock.MonotonicMs();
  for (int i = 0; i < 1000; ++i) {
    const int64_t now = clock.MonotonicMs();
    ASSERT_GE(now, last);
    last = now;
  }
  const int64_t before = clock.MonotonicMs();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(clock.MonotonicMs() - before, 20);
}

TEST(ManualClock, MovesOnlyWhenTold) {
  ManualClock clock(5000, 7);
  EXPECT_EQ(clock.WallMs(), 5000);
  EXPECT_EQ(clock.MonotonicMs(), 7);
  clock.Advance(250);
  EXPECT_EQ(clock.WallMs(), 5250);
  EXPECT_EQ(clock.MonotonicMs(), 257);
  // Setting the machine's time moves the wall reading alone.
  clock.SetWallMs(1000);
  EXPECT_EQ(clock.WallMs(), 1000);
  EXPECT_EQ(clock.MonotonicMs(), 257);
  const Clock& as_interface = clock;
  EXPECT_EQ(as_interface.WallMs(), 1000);
  EXPECT_EQ(ManualClock().WallMs(), ManualClock::kDefaultWallMs);
}

}  // namespace
}  // namespace ablate
