// The script stdout parser (worker/script_output.h) against every line shape of issue 14 and
// against garbage, including a 1 MB line.
#include "worker/script_output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace ablate::worker {
namespace {

using Kind = ScriptLine::Kind;

TEST(NanogptLineTest, ValLineAsTheRecordsPrintIt) {
  auto n = ParseNanogptLine("step:125/1393 val_loss:4.2618 train_time:16234ms step_avg:129.87ms");
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->is_val);
  EXPECT_EQ(n->point.step(), 125);
  EXPECT_DOUBLE_EQ(n->point.val_loss(), 4.2618);
  EXPECT_DOUBLE_EQ(n->point.train_time_ms(), 16234);
  EXPECT_FALSE(n->point.has_train_loss());
  EXPECT_DOUBLE_EQ(*n->step_avg_ms, 129.87);
}

TEST(NanogptLineTest, TrainLineAsTheRecordsPrintIt) {
  auto n =
      ParseNanogptLine("step:126/1393 train_loss:4.1234 train_time:16364ms step_avg:129.88ms");
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->is_val);
  EXPECT_EQ(n->point.step(), 126);
  EXPECT_DOUBLE_EQ(n->point.train_loss(), 4.1234);
  EXPECT_DOUBLE_EQ(n->point.train_time_ms(), 16364);
  EXPECT_FALSE(n->point.has_val_loss());
}

TEST(NanogptLineTest, TrainLineWithoutTrainLossAsLaterRecordsPrintIt) {
  auto n = ParseNanogptLine("step:126/1393 train_time:16364ms step_avg:129.88ms");
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->is_val);
  EXPECT_FALSE(n->point.has_train_loss());
  EXPECT_DOUBLE_EQ(n->point.train_time_ms(), 16364);
}

TEST(NanogptLineTest, StepAvgNanBeforeTimingStarts) {
  auto n = ParseNanogptLine("step:0/1393 val_loss:10.8258 train_time:0ms step_avg:nanms");
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->is_val);
  EXPECT_EQ(n->point.step(), 0);
  EXPECT_DOUBLE_EQ(n->point.train_time_ms(), 0);
  EXPECT_FALSE(n->step_avg_ms);
}

TEST(NanogptLineTest, ExtraFieldsMayFollow) {
  auto n = ParseNanogptLine(
      "step:1393/1393 val_loss:3.2791 train_time:179520ms step_avg:129.80ms "
      "peak_mem:31234MiB lr:0.1 note\r");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->point.step(), 1393);
  EXPECT_DOUBLE_EQ(n->point.val_loss(), 3.2791);
  EXPECT_DOUBLE_EQ(n->point.train_time_ms(), 179520);
}

// Track 3's records print times in seconds.
TEST(NanogptLineTest, TimesInSecondsAsTrack3PrintsThem) {
  auto n = ParseNanogptLine("step:3250/3250 val_loss:2.9190 train_time:2150.483s step_avg:0.66s");
  ASSERT_TRUE(n);
  EXPECT_DOUBLE_EQ(n->point.train_time_ms(), 2150483);
  EXPECT_DOUBLE_EQ(*n->step_avg_ms, 660);
}

TEST(NanogptLineTest, NotTheFormat) {
  for (const char* line :
       {"", "step", "step:", "step:abc/10 val_loss:1", "step:-3/10 val_loss:1",
        "step:12/100",  // nothing but the step
        "step:12/100 val_loss:abc train_time:1ms", "step:12/100 train_time:12",
        "step:12/100 train_time:12h",
        "stepper:1/2 val_loss:3", "  val_loss:3.2 step:1/2", "peak memory consumption: 31 GiB",
        "{\"event\":\"step\"", "\xff\xfe\x00garbage"}) {
    EXPECT_FALSE(ParseNanogptLine(line)) << line;
  }
}

TEST(ScriptOutputParserTest, AutoDetectsBothFormatsLineByLine) {
  ScriptOutputParser p(LogFormat::kAuto, 3.28);
  EXPECT_EQ(p.Parse("step:1/10 train_loss:9.5 train_time:100ms step_avg:nanms").kind, Kind::kPoint);
  ScriptLine j = p.Parse(R"({"event":"step","step":2,"train_loss":9.0,"train_ms":200})");
  ASSERT_EQ(j.kind, Kind::kPoint);
  EXPECT_EQ(j.point.step(), 2);
  EXPECT_DOUBLE_EQ(j.point.train_loss(), 9.0);
  EXPECT_DOUBLE_EQ(j.point.train_time_ms(), 200);
  EXPECT_EQ(p.Parse("Running python 3.11 with torch 2.1").kind, Kind::kIgnored);
  EXPECT_EQ(p.Parse(R"({"not": "an event"})").kind, Kind::kIgnored);
  EXPECT_EQ(p.Parse(R"({"event":"error","message":"boom"})").message, "boom");
}

TEST(ScriptOutputParserTest, AFixedFormatIgnoresTheOther) {
  ScriptOutputParser nanogpt(LogFormat::kModdedNanogpt, 3.28);
  EXPECT_EQ(nanogpt.Parse(R"({"event":"val","step":2,"val_loss":3.0})").kind, Kind::kIgnored);
  ScriptOutputParser events(LogFormat::kAblateEvents, 3.28);
  EXPECT_EQ(events.Parse("step:2/10 val_loss:3.0 train_time:5ms").kind, Kind::kIgnored);
  EXPECT_EQ(events.val_points(), 0);
}

TEST(ScriptOutputParserTest, TimeToTargetIsTrainTimeAtTheFirstValAtOrBelowTarget) {
  ScriptOutputParser p(LogFormat::kAuto, 3.28);
  p.Parse("step:0/1393 val_loss:10.8258 train_time:0ms step_avg:nanms");
  p.Parse("step:1000/1393 train_loss:3.4 train_time:130000ms step_avg:130.00ms");
  p.Parse("step:1000/1393 val_loss:3.3100 train_time:130000ms step_avg:130.00ms");
  p.Parse("step:1375/1393 val_loss:3.2800 train_time:178000ms step_avg:129.45ms");
  p.Parse("step:1393/1393 val_loss:3.2790 train_time:179520ms step_avg:128.87ms");
  v1::RunSummary s = p.Summary();
  EXPECT_TRUE(s.reached_target());
  EXPECT_DOUBLE_EQ(s.time_to_target_ms(), 178000);
  EXPECT_EQ(s.target_step(), 1375);
  EXPECT_DOUBLE_EQ(s.final_val_loss(), 3.2790);  // the last val line
  EXPECT_EQ(s.steps(), 1393);
  EXPECT_DOUBLE_EQ(s.train_time_ms(), 179520);
  // One ms/step for scripts: the training time over its steps (not the printed step_avg), so
  // that steps x ms/step is the training time (issue 23: 1393 x 128.87 would be 179,516).
  EXPECT_DOUBLE_EQ(s.mean_step_ms(), 179520.0 / 1393);
  EXPECT_DOUBLE_EQ(s.steps() * s.mean_step_ms(), s.train_time_ms());
  EXPECT_EQ(p.val_points(), 4);
  EXPECT_FALSE(p.saw_non_finite());
}

TEST(ScriptOutputParserTest, EachPointGetsStepMsFromConsecutiveTrainTimes) {
  ScriptOutputParser p(LogFormat::kAuto, 3.28);
  ScriptLine first = p.Parse("step:0/100 val_loss:10.8 train_time:0ms step_avg:nanms");
  EXPECT_FALSE(first.point.has_step_ms()) << "no earlier train_time";
  ScriptLine a = p.Parse("step:1/100 train_loss:9 train_time:150ms step_avg:150.00ms");
  EXPECT_DOUBLE_EQ(a.point.step_ms(), 150);
  ScriptLine b = p.Parse("step:5/100 train_loss:8 train_time:550ms step_avg:110.00ms");
  EXPECT_DOUBLE_EQ(b.point.step_ms(), 100) << "400 ms over 4 steps";
  ScriptLine val = p.Parse("step:5/100 val_loss:7.9 train_time:550ms step_avg:110.00ms");
  EXPECT_FALSE(val.point.has_step_ms()) << "a val line at the same step adds no step";
  ScriptLine c = p.Parse(R"({"event":"step","step":6,"train_loss":7.5,"train_ms":670.0})");
  EXPECT_DOUBLE_EQ(c.point.step_ms(), 120);
  EXPECT_DOUBLE_EQ(p.Summary().mean_step_ms(), 670.0 / 6);
}

TEST(ScriptOutputParserTest, NeverReachedLeavesTimeToTargetUnset) {
  ScriptOutputParser p(LogFormat::kAuto, 3.28);
  p.Parse("step:10/10 val_loss:3.5 train_time:10ms step_avg:1.00ms");
  v1::RunSummary s = p.Summary();
  EXPECT_FALSE(s.reached_target());
  EXPECT_FALSE(s.has_time_to_target_ms());
  EXPECT_DOUBLE_EQ(s.final_val_loss(), 3.5);
}

TEST(ScriptOutputParserTest, EventValUsesTheLastStepsTrainTimeAndTheEndEventWins) {
  ScriptOutputParser p(LogFormat::kAuto, 4.0);
  p.Parse(R"({"event":"step","step":4,"train_loss":4.5,"train_ms":40.0})");
  p.Parse(R"({"event":"val","step":4,"val_loss":3.9})");
  EXPECT_DOUBLE_EQ(p.Summary().time_to_target_ms(), 40.0);
  EXPECT_EQ(p.Parse(R"({"event":"end","status":"ok","steps":4,"final_val_loss":3.85})").kind,
            Kind::kEnd);
  EXPECT_DOUBLE_EQ(p.Summary().final_val_loss(), 3.85);
  EXPECT_DOUBLE_EQ(p.Summary().time_to_target_ms(), 40.0);
}

TEST(ScriptOutputParserTest, NanLossIsNoticed) {
  ScriptOutputParser p(LogFormat::kAuto, 3.28);
  EXPECT_EQ(p.Parse("step:5/10 val_loss:nan train_time:5ms step_avg:1.00ms").kind, Kind::kPoint);
  EXPECT_TRUE(p.saw_non_finite());
}

TEST(ScriptOutputParserTest, GarbageAndAMegabyteLineAreIgnored) {
  ScriptOutputParser p(LogFormat::kAuto, 3.28);
  std::mt19937 rng(14);
  for (int i = 0; i < 2000; ++i) {
    std::string line(rng() % 200, '\0');
    for (char& c : line) c = static_cast<char>(rng());
    if (i % 3 == 0) line = "step:" + line;
    if (i % 3 == 1) line = "{" + line;
    p.Parse(line);  // must neither crash nor throw
  }
  std::string mb(1 << 20, 'x');
  EXPECT_EQ(p.Parse(mb).kind, Kind::kIgnored);
  EXPECT_EQ(p.Parse("step:1/2 " + mb).kind, Kind::kIgnored);
  EXPECT_EQ(p.Parse("{" + mb).kind, Kind::kIgnored);
  // A megabyte of extra field after a valid line is still that line.
  ScriptLine long_ok = p.Parse("step:7/9 val_loss:3.0 train_time:70ms extra:" + mb);
  EXPECT_EQ(long_ok.kind, Kind::kPoint);
  EXPECT_EQ(long_ok.point.step(), 7);
}

// Found by the fuzz target script_output: a val event with step -2 became a point.
TEST(ScriptOutputParserTest, AnEventWithANegativeOrMissingStepIsIgnored) {
  for (LogFormat format : {LogFormat::kAuto, LogFormat::kAblateEvents}) {
    ScriptOutputParser p(format, 3.28);
    EXPECT_EQ(p.Parse(R"({"event":"val","step":-2,"val_loss":3.0,"train_ms":25.1})").kind,
              Kind::kIgnored);
    EXPECT_EQ(p.Parse(R"({"event":"val","val_loss":3.0})").kind, Kind::kIgnored);
    EXPECT_EQ(p.Parse(R"({"event":"step","step":0.5,"train_loss":3.0})").kind, Kind::kIgnored);
    EXPECT_EQ(p.val_points(), 0);
    EXPECT_FALSE(p.Summary().reached_target());
    ScriptLine ok = p.Parse(R"({"event":"val","step":2,"val_loss":3.0,"train_ms":25.1})");
    ASSERT_EQ(ok.kind, Kind::kPoint);
    EXPECT_EQ(ok.point.step(), 2);
  }
}

TEST(ScriptOutputParserTest, TorchrunTeePrefixesCountForRankZeroOnly) {
  ScriptOutputParser p(LogFormat::kAuto, 3.28);
  ScriptLine zero = p.Parse("[default0]:step:4/8 val_loss:3.1 train_time:40ms step_avg:10.00ms");
  ASSERT_EQ(zero.kind, Kind::kPoint);
  EXPECT_EQ(zero.point.step(), 4);
  EXPECT_EQ(p.Parse("[default1]:step:4/8 val_loss:3.0 train_time:41ms").kind, Kind::kIgnored);
  EXPECT_EQ(p.Parse(R"([trainer12]:{"event":"val","step":8,"val_loss":2.0})").kind, Kind::kIgnored);
  EXPECT_EQ(p.val_points(), 1);
  EXPECT_DOUBLE_EQ(p.Summary().final_val_loss(), 3.1);
}

TEST(ClassifyScriptExitTest, ACleanExitNeedsAValLineOnlyWhereOneIsExpected) {
  ScriptExitFacts f;  // exit 0, no val line
  ExitVerdict v = ClassifyScriptExit(f);
  EXPECT_EQ(v.status, "failed");
  EXPECT_NE(v.error.find("without printing a single parseable val line"), std::string::npos);
  f.val_points = 3;
  EXPECT_EQ(ClassifyScriptExit(f).status, "ok");
  // Node 1 of a two-node run: its ranks print nothing; node 0's curve is the run's.
  f.val_points = 0;
  f.val_lines_expected = false;
  EXPECT_EQ(ClassifyScriptExit(f).status, "ok");
  // It must still exit cleanly, and a NaN still counts.
  f.exit_code = 1;
  EXPECT_EQ(ClassifyScriptExit(f).status, "failed");
  f.exit_code = 0;
  f.non_finite = true;
  EXPECT_EQ(ClassifyScriptExit(f).status, "nan");
}

TEST(LogFormatTest, Names) {
  for (LogFormat f : {LogFormat::kAuto, LogFormat::kModdedNanogpt, LogFormat::kAblateEvents}) {
    EXPECT_EQ(ParseLogFormat(LogFormatName(f)), f);
  }
  EXPECT_FALSE(ParseLogFormat("nanogpt"));
}

}  // namespace
}  // namespace ablate::worker
