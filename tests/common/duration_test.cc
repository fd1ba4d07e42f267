// The one duration grammar (common/spec/duration.h), shared by sweep specs, the pools file and
// ablate-train's --checkpoint-every: a unit is always required.
#include "common/spec/duration.h"

#include <gtest/gtest.h>

#include <string>

namespace ablate {
namespace {

int64_t Ms(std::string_view text) {
  std::string error;
  std::optional<int64_t> ms = ParseDurationMs(text, &error);
  EXPECT_TRUE(ms.has_value()) << text << ": " << error;
  return ms.value_or(-1);
}

std::string ErrorOf(std::string_view text, PeriodUnits units = PeriodUnits::kTime) {
  std::string error;
  EXPECT_FALSE(ParsePeriod(text, units, &error).has_value()) << text << " was accepted";
  return error;
}

TEST(Duration, TimeUnits) {
  EXPECT_EQ(Ms("500ms"), 500);
  EXPECT_EQ(Ms("30s"), 30000);
  EXPECT_EQ(Ms("5m"), 300000);
  EXPECT_EQ(Ms("2h"), 7200000);
  EXPECT_EQ(Ms("0s"), 0);
  EXPECT_EQ(Ms("999999999h"), int64_t{999999999} * 3600000);
}

// The worker passes a sweep's period to ablate-train as "1.500s" (worker/checkpoint_dir.h).
TEST(Duration, FractionsDownToAMillisecond) {
  EXPECT_EQ(Ms("1.5s"), 1500);
  EXPECT_EQ(Ms("1.500s"), 1500);
  EXPECT_EQ(Ms("0.25h"), 900000);
  EXPECT_EQ(Ms("0.001s"), 1);
  EXPECT_NE(ErrorOf("0.5ms").find("not a whole number of milliseconds"), std::string::npos);
  EXPECT_NE(ErrorOf("1.0001s").find("not a duration"), std::string::npos) << "4 decimals";
}

TEST(Duration, ABareNumberIsRefusedSayingWhatToWrite) {
  EXPECT_EQ(ErrorOf("600"),
            "'600' has no unit; write 600s for seconds (e.g. 500ms, 30s, 5m or 2h)");
  EXPECT_EQ(ErrorOf("600", PeriodUnits::kTimeOrSteps),
            "'600' has no unit; write 600s for seconds or 600steps for steps (e.g. 30s, 10m, 1h "
            "or 500steps)");
  EXPECT_NE(ErrorOf("1.5").find("has no unit"), std::string::npos);
}

TEST(Duration, StepsOnlyWhereAFieldCountsThem) {
  std::string error;
  std::optional<Period> p = ParsePeriod("500steps", PeriodUnits::kTimeOrSteps, &error);
  ASSERT_TRUE(p.has_value()) << error;
  EXPECT_EQ(p->steps, 500);
  EXPECT_FALSE(p->ms.has_value());
  p = ParsePeriod("10m", PeriodUnits::kTimeOrSteps, &error);
  ASSERT_TRUE(p.has_value()) << error;
  EXPECT_EQ(p->ms, 600000);
  EXPECT_FALSE(p->steps.has_value());
  EXPECT_EQ(ErrorOf("500steps"), "'500steps' is not a duration; write e.g. 500ms, 30s, 5m or 2h");
  EXPECT_EQ(ErrorOf("1.5steps", PeriodUnits::kTimeOrSteps),
            "'1.5steps' is not a whole number of steps");
}

TEST(Duration, MalformedTextIsNotADuration) {
  for (const char* bad : {"", "m", "s5", "5 m", "5d", "5min", "-1s", "+1s", "1e3s", ".5s", "5.s",
                          "1,5s", "ten-minutes", "5S", "1234567890s", " 5s", "5s "}) {
    EXPECT_NE(ErrorOf(bad).find("is not a duration"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace ablate
