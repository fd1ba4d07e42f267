// The strict record-log reader (common/record_log.h) on the shapes the record eras print and on
// the defects it must name by line. Whole logs as the eras write them are made by
// tests/records/write_record_logs.py and read in tests/records/.
#include "common/record_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ablate {
namespace {

using ::testing::HasSubstr;

const std::string kSep(100, '=');

std::string NvidiaSmi(int gpus) {
  std::string out =
      "+-----------------------------------------------------------------------------+\n"
      "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile |\n";
  for (int i = 0; i < gpus; ++i) {
    out += "|   " + std::to_string(i) +
           "  NVIDIA H100 80GB HBM3          On  |   00000000:61:00.0 Off |        0 |\n";
  }
  return out;
}

// 2024-12 on: script, separator, nvidia-smi, separator, output without train_loss.
std::string EraB() {
  return "import os\nprint0(f\"step:{step}/{n} val_loss:{v:.4f}\")\n" + kSep + "\n" +
         NvidiaSmi(8) + kSep + "\n" +
         "step:0/4 val_loss:10.8258 train_time:0ms step_avg:nanms\n"
         "step:1/4 train_time:100ms step_avg:100.00ms\n"
         "step:2/4 train_time:200ms step_avg:100.00ms\n"
         "step:2/4 val_loss:4.5000 train_time:200ms step_avg:100.00ms\n"
         "step:3/4 train_time:300ms step_avg:100.00ms\n"
         "step:4/4 train_time:400ms step_avg:100.00ms\n"
         "step:4/4 val_loss:3.2768 train_time:400ms step_avg:100.00ms\n"
         "peak memory allocated: 31563 MiB reserved: 33000 MiB\n";
}

TEST(RecordLogTest, ReadsTheScriptTheGpusAndTheFinalValidation) {
  absl::StatusOr<RecordLog> log = ParseRecordLog(EraB(), "b.txt");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->script, "import os\nprint0(f\"step:{step}/{n} val_loss:{v:.4f}\")\n");
  EXPECT_EQ(log->total_steps, 4);
  EXPECT_EQ(log->points.size(), 7u);
  EXPECT_DOUBLE_EQ(log->final_val_loss, 3.2768);
  EXPECT_DOUBLE_EQ(log->final_train_time_ms, 400);
  EXPECT_DOUBLE_EQ(log->mean_step_ms(), 100);
  EXPECT_EQ(log->timed_from_step, 0);
  EXPECT_EQ(log->LoggedHardware(), "8x NVIDIA H100 80GB HBM3");
  std::optional<TargetHit> hit = TimeToTarget(*log, 3.28);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->step, 4);
  EXPECT_FALSE(TimeToTarget(*log, 3.0));
  EXPECT_EQ(TimeToTarget(*log, 5.0)->step, 2);
}

TEST(RecordLogTest, The2024ClockResetDropsCompileTimeAndCountsTimedStepsOnly) {
  std::string text = kSep + "\nimport torch\n" + kSep + "\n" + NvidiaSmi(1) + kSep + "\n";
  text += "step:0/20 val_loss:10.9264 train_time:285ms step_avg:nanms\n";
  for (int s = 1; s <= 10; ++s) {
    text += "step:" + std::to_string(s) + "/20 train_loss:7.0 train_time:" +
            std::to_string(74000 + 200 * s) + "ms step_avg:nanms\n";
  }
  for (int s = 11; s <= 20; ++s) {
    text += "step:" + std::to_string(s) + "/20 train_loss:6.0 train_time:" +
            std::to_string(200 * (s - 10)) + "ms step_avg:200.00ms\n";
  }
  text += "step:20/20 val_loss:3.2700 train_time:2000ms step_avg:200.00ms";  // no final newline
  absl::StatusOr<RecordLog> log = ParseRecordLog(text, "a.txt");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->script, "import torch\n");
  EXPECT_EQ(log->timed_from_step, 10);
  EXPECT_DOUBLE_EQ(log->mean_step_ms(), 200);
  EXPECT_FALSE(log->points[5].train_time_ms) << "compile time before the reset is not kept";
  EXPECT_TRUE(log->points[1].train_loss);
  EXPECT_EQ(log->LoggedHardware(), "1x NVIDIA H100 80GB HBM3");
}

TEST(RecordLogTest, SecondsExtraFieldsAndFreeTextAreRead) {
  std::string text =
      "step:0/2 val_loss:10.825812 train_time:0.000s step_avg:0.03ms\n"
      "Compiling model and warming up kernels...\n"
      "step:1/2 train_time:1.500s step_avg:1500.00ms\n"
      "step:2/2 val_loss:2.919876 val_ema_loss:2.91 ema_beta:0.99 train_time:3.250s "
      "step_avg:1625.00ms\n";
  absl::StatusOr<RecordLog> log = ParseRecordLog(text, "t3.txt");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(log->seconds);
  EXPECT_EQ(log->script, "");
  EXPECT_DOUBLE_EQ(log->final_train_time_ms, 3250);
  EXPECT_DOUBLE_EQ(log->final_val_loss, 2.919876);
  EXPECT_EQ(log->LoggedHardware(), "");
}

// Each defect (every occurrence of `from` replaced) is an error naming the file, the line and what is wrong.
struct Defect {
  const char* name;
  std::string from, to;  // replace in EraB()
  std::string want;
};

class RecordLogDefectTest : public ::testing::TestWithParam<Defect> {};

TEST_P(RecordLogDefectTest, IsNamedByLine) {
  std::string text = EraB();
  const Defect& d = GetParam();
  size_t at = text.find(d.from);
  ASSERT_NE(at, std::string::npos);
  for (; at != std::string::npos; at = text.find(d.from, at + d.to.size())) {
    text.replace(at, d.from.size(), d.to);
  }
  absl::StatusOr<RecordLog> log = ParseRecordLog(text, "x.txt");
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(log.status().message(), HasSubstr(d.want));
}

// EraB's step lines are lines 15-21: the script is 2 lines, the separators 2, nvidia-smi 10.
INSTANTIATE_TEST_SUITE_P(
    Defects, RecordLogDefectTest,
    ::testing::Values(
        Defect{"ValNotANumber", "val_loss:4.5000", "val_loss:abc", "x.txt:18: val_loss 'abc'"},
        Defect{"ValNan", "val_loss:4.5000", "val_loss:nan", "x.txt:18: val_loss 'nan' is not"},
        Defect{"StepsOutOfOrder", "step:3/4 train_time", "step:1/4 train_time",
               "x.txt:19: step 1 comes after step 2: steps out of order"},
        Defect{"SecondRun", "step:3/4 train_time:300ms", "step:0/4 train_time:0ms",
               "second run in the same file"},
        Defect{"TotalChanges", "step:3/4", "step:3/5", "x.txt:19: step:3/5 after step:2/4"},
        Defect{"NoUnit", "step:3/4 train_time:300ms", "step:3/4 train_time:300",
               "x.txt:19: train_time '300' is not a time"},
        Defect{"CutLine", "step:4/4 val_loss:3.2768 train_time:400ms step_avg:100.00ms\n",
               "step:4/4 val_lo\n", "x.txt:21: 'val_lo' is not a key:value field"},
        Defect{"NoFinalVal", "step:4/4 val_loss:3.2768 train_time:400ms step_avg:100.00ms\n", "",
               "x.txt:21: no validation at the last step 4/4 and no stop at the target 3.28 "
               "(the last validation is at step 2: 4.5): a truncated log?"},
        Defect{"NotALog", "step:", "stop:", "x.txt: not a modded-nanogpt record log"}),
    [](const auto& info) { return std::string(info.param.name); });

// Only an early drop is the 2024 reset; one later is an error, as is a second early one.
TEST(RecordLogTest, TrainTimeGoingBackLateOrTwiceIsAnError) {
  auto log_with_drops = [](std::vector<int> drop_after) {
    std::string text;
    double t = 0;
    for (int s = 1; s <= 60; ++s) {
      t = std::find(drop_after.begin(), drop_after.end(), s - 1) != drop_after.end() ? 100
                                                                                     : t + 100;
      text += "step:" + std::to_string(s) + "/60 train_time:" + std::to_string(int(t)) + "ms\n";
    }
    return text + "step:60/60 val_loss:3.27 train_time:" + std::to_string(int(t)) + "ms\n";
  };
  EXPECT_TRUE(ParseRecordLog(log_with_drops({10}), "ok.txt").ok());
  absl::StatusOr<RecordLog> late = ParseRecordLog(log_with_drops({55}), "late.txt");
  ASSERT_FALSE(late.ok());
  EXPECT_THAT(late.status().message(),
              HasSubstr("late.txt:56: train_time goes back from 5500ms (line 55) to 100ms"));
  absl::StatusOr<RecordLog> twice = ParseRecordLog(log_with_drops({5, 10}), "twice.txt");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("twice.txt:11: train_time goes back"));
}

TEST(RecordLogTest, RefusesWhatIsTooBig) {
  std::string big(static_cast<size_t>(kMaxRecordLogBytes) + 1, 'x');
  absl::StatusOr<RecordLog> log = ParseRecordLog(big, "big.txt");
  ASSERT_FALSE(log.ok());
  EXPECT_THAT(log.status().message(), HasSubstr("more than the 16 MiB"));
}

}  // namespace
}  // namespace ablate
