// The published record history (migrations/0003_records.sql) and the cross-sweep run query of
// store_records.cc. The expected table below is written as the reference sheet prints it
// (US dates, minutes, "-1" for a dash) and converted here, independently of the migration.
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::AddSweep;
using testing::OpenOrDie;
using testing::ResultOf;
using testing::TempDir;

struct SheetRow {
  const char* id;
  const char* us_date;  // MM/DD/YY
  const char* minutes;  // README record time
  int steps;            // -1: none
  double ms_per_step;   // -1: none
  const char* preset;
};

// modded-nanogpt README "World record history", track 1 (reference/modded-nanogpt.md §1).
const std::vector<SheetRow> kSheet = {
    {"1", "05/28/24", "45", 19560, 140, ""},
    {"2", "06/06/24", "31.4", 9536, -1, ""},
    {"3", "10/04/24", "24.9", 7000, -1, ""},
    {"4", "10/11/24", "22.3", 6200, 216.3, ""},
    {"5", "10/14/24", "15.2", 5100, 178.9, ""},
    {"6", "10/18/24", "13.1", 5100, 153.8, ""},
    {"7", "10/18/24", "12.0", 5100, 141.8, ""},
    {"8", "11/03/24", "10.8", 4578, 141.9, "r8-untied"},
    {"9", "11/06/24", "8.2", 3200, 154.8, "r9-shortcuts"},
    {"10", "11/08/24", "7.8", 3242, 144.7, ""},
    {"11", "11/10/24", "7.2", 3000, 145.0, "r11-unet"},
    {"12", "11/19/24", "5.03", 1875, 161.8, ""},
    {"13", "11/24/24", "4.66", 1750, 160.9, ""},
    {"14", "12/04/24", "4.41", 1530, 174.1, ""},
    {"15", "12/08/24", "3.95", 1480, 161.1, ""},
    {"16", "12/10/24", "3.80", 1480, 157.5, ""},
    {"17", "12/17/24", "3.57", 1490, 144.0, ""},
    {"18", "01/04/25", "3.4", 1390, 148.1, "r18-softcap15"},
    {"19", "01/13/25", "3.142", 1395, 136.1, ""},
    {"20", "01/16/25", "2.992", 1393, 129.8, "r20-sub3min"},
    {"21", "01/26/25", "2.933", 1770, 100.0, ""},
    {"21b", "02/01/25", "2.997", 1770, 101.6, ""},
    {"21c", "05/24/25", "3.014", 1770, 102.2, ""},
    {"22", "05/24/25", "2.990", 1770, 101.3, ""},
    {"23", "05/25/25", "2.979", 1770, 101.0, ""},
    {"24", "05/30/25", "2.966", 1770, 100.5, ""},
    {"25", "07/13/25", "2.896", 1770, 98.2, ""},
    {"26", "07/13/25", "2.863", 1750, 98.1, ""},
    {"27", "07/18/25", "2.817", 1750, 96.6, ""},
    {"28", "08/23/25", "2.812", 1695, 99.7, ""},
    {"29", "09/03/25", "2.731", 1670, 98.0, ""},
    {"30", "09/05/25", "2.717", 1705, 95.7, ""},
    {"31", "09/10/25", "2.656", 1670, 95.4, ""},
    {"32", "09/11/25", "2.625", 1670, 93.5, ""},
    {"33", "09/15/25", "2.565", 1660, 92.8, ""},
    {"34", "09/18/25", "2.547", 1645, 92.9, ""},
    {"35", "09/21/25", "2.527", 1680, 90.2, ""},
    {"36", "09/23/25", "2.495", 1680, 89.2, ""},
    {"37", "09/27/25", "2.483", 1680, 88.2, ""},
    {"38", "09/29/25", "2.476", 1670, 89.0, ""},
    {"39", "09/30/25", "2.447", 2420, 60.7, ""},
    {"40", "10/04/25", "2.358", 2330, 60.4, ""},
    {"41", "10/24/25", "2.345", 2315, 60.7, ""},
    {"42", "10/27/25", "2.313", 2285, 61.2, ""},
    {"43", "11/10/25", "2.284", 2245, 61.3, ""},
    {"44", "11/16/25", "2.269", 2245, 61.3, ""},
    {"45", "11/18/25", "2.248", 2225, 60.6, ""},
    {"46", "11/29/25", "2.203", 2160, 61.2, ""},
    {"47", "12/10/25", "2.193", 2160, 60.8, ""},
    {"48", "12/11/25", "2.170", 2160, 61.5, ""},
    {"49", "12/14/25", "2.146", 2110, 61.1, ""},
    {"50", "12/18/25", "2.128", 2090, 60.8, ""},
    {"51", "12/19/25", "2.075", 2035, 60.9, ""},
    {"52", "12/21/25", "2.037", 2000, 61.0, ""},
    {"53", "12/22/25", "1.988", 1920, 62.3, ""},
    {"54", "12/26/25", "1.940", 1880, 62.0, ""},
    {"55", "12/29/25", "1.918", 1845, 62.0, ""},
    {"56", "12/31/25", "1.894", 1825, 62.0, ""},
    {"57", "01/04/26", "1.878", 1840, 61.3, ""},
    {"58", "01/07/26", "1.820", 1775, 61.2, ""},
    {"59", "01/10/26", "1.781", 1775, 60.0, ""},
    {"60", "01/16/26", "1.765", 1775, 59.7, ""},
    {"61", "01/18/26", "1.748", 1765, 59.2, ""},
    {"62", "01/19/26", "1.655", 1600, 61.3, ""},
    {"63", "01/26/26", "1.650", 1575, 62.1, ""},
    {"64", "01/30/26", "1.630", 1555, 62.1, ""},
    {"65", "01/30/26", "1.613", 1575, 62.1, ""},
    {"66", "01/31/26", "1.595", -1, -1, ""},
    {"67", "01/31/26", "1.540", 1555, 59.8, ""},
    {"68", "01/31/26", "1.535", 1555, 61.6, ""},
    {"69", "02/02/26", "1.528", 1555, 61.7, ""},
    {"70", "02/03/26", "1.521", 1547, 61.6, ""},
    {"71", "02/06/26", "1.516", 1555, 61.2, ""},
    {"72", "02/10/26", "1.496", 1555, 59.8, ""},
    {"73", "02/12/26", "1.485", 1510, 60.5, ""},
    {"74", "02/16/26", "1.468", 1490, 59.6, ""},
    {"75", "02/23/26", "1.453", 1490, 58.9, ""},
    {"76", "02/28/26", "1.446", 1490, 59.3, ""},
    {"77", "03/06/26", "1.435", 1490, 58.5, ""},
    {"78", "03/22/26", "1.426", 1490, 57.9, ""},
    {"79", "04/04/26", "1.411", 1490, 57.1, ""},
    {"80", "04/08/26", "1.406", 1480, 62.6, ""},
    {"81", "04/22/26", "1.363", 1415, 57.8, ""},
    {"82", "04/29/26", "1.353", 1450, 55.1, ""},
    {"83", "05/20/26", "1.328", 1480, 56.9, ""},
    {"84", "05/21/26", "1.320", 1485, 56.5, ""},
    {"85", "05/27/26", "1.271", 1335, 59.1, ""},
    {"86", "05/27/26", "1.266", -1, -1, ""},
    {"87", "06/11/26", "1.256", 1398, 55.8, ""},
    {"88", "07/13/26", "1.243", 1375, 57.1, ""},
    {"89", "07/17/26", "1.23", 1390, 57.2, ""},
};

// "01/16/25" -> "2025-01-16".
std::string IsoDate(const std::string& us) {
  return "20" + us.substr(6, 2) + "-" + us.substr(0, 2) + "-" + us.substr(3, 2);
}

// Exact minutes-to-ms in integers: "2.992" -> 2 * 60000 + 992 * 60000 / 1000.
int64_t MinutesToMs(const std::string& minutes) {
  const size_t dot = minutes.find('.');
  int64_t ms = std::stoll(minutes.substr(0, dot)) * 60000;
  if (dot == std::string::npos) return ms;
  const std::string frac = minutes.substr(dot + 1);
  int64_t scale = 1;
  for (size_t i = 0; i < frac.size(); ++i) scale *= 10;
  EXPECT_EQ(std::stoll(frac) * 60000 % scale, 0) << minutes;
  return ms + std::stoll(frac) * 60000 / scale;
}

TEST(RecordsTest, MigrationLoadsEveryPublishedRecord) {
  auto store = OpenOrDie(":memory:");
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::vector<Record>> records = store->ListRecords();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 91u);  // #1..#89, plus two re-timings of #21
  ASSERT_EQ(records->size(), kSheet.size());
  for (size_t i = 0; i < kSheet.size(); ++i) {
    const SheetRow& want = kSheet[i];
    const Record& got = (*records)[i];
    SCOPED_TRACE(want.id);
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.number, std::atoi(want.id));
    EXPECT_EQ(got.date, IsoDate(want.us_date));
    EXPECT_EQ(got.record_time_ms, static_cast<double>(MinutesToMs(want.minutes)));
    EXPECT_EQ(got.steps.value_or(-1), want.steps);
    EXPECT_EQ(got.ms_per_step.value_or(-1), want.ms_per_step);
    EXPECT_EQ(got.preset, want.preset);
    EXPECT_FALSE(got.description.empty());
  }
}

TEST(RecordsTest, TextColumnsAndOrder) {
  auto store = OpenOrDie(":memory:");
  ASSERT_NE(store, nullptr);
  std::vector<Record> records = store->ListRecords().value();
  ASSERT_EQ(records.size(), 91u);
  const Record& r20 = records[19];
  EXPECT_EQ(r20.id, "20");
  EXPECT_EQ(r20.record_time_ms, 179520.0);  // 2.992 min
  EXPECT_EQ(r20.source, "Sub3Min (86a2aa9f)");
  EXPECT_EQ(r20.description,
            "merged QKV, long-short SWA, attn scale 0.12, Adam eps 1e-10, batched Muon");
  EXPECT_EQ(records[2].description, "Muon introduced (\"OrthogonalNesterov\"); no log");
  EXPECT_EQ(records[22].id, "21c");
  EXPECT_EQ(records[22].description, "#21 re-timed, latest torch");
  EXPECT_EQ(records[67].id, "66");
  EXPECT_EQ(records[67].source, "");  // "–" in the sheet
  for (size_t i = 1; i < records.size(); ++i) EXPECT_LE(records[i - 1].date, records[i].date);
}

// One attempt on `run_id` by `worker`, finished as `state` with a summary when it succeeded.
void Finish(Store& store, int64_t run_id, const std::string& worker, AttemptState state,
            double loss) {
  Attempt a = store.CreateAttempt(run_id, worker).value();
  ASSERT_TRUE(store.MarkAttemptRunning(a.id, a.fencing_token).ok());
  AttemptResult result = ResultOf(state);
  if (state == AttemptState::kSucceeded) {
    RunSummary s;
    s.final_val_loss = loss;
    s.reached_target = loss <= 3.28;
    if (s.reached_target) s.time_to_target_ms = 180000;
    result.summary = s;
  }
  ASSERT_TRUE(store.FinishAttempt(a.id, a.fencing_token, result).ok());
}

TEST(RecordsTest, SucceededRunsByConfigHashWithTheirGpus) {
  auto store = OpenOrDie(":memory:");
  ASSERT_NE(store, nullptr);
  Worker h100;
  h100.id = "node-1";
  h100.gpus = {{0, "NVIDIA H100 80GB HBM3", 81559}, {1, "NVIDIA H100 80GB HBM3", 81559}};
  ASSERT_TRUE(store->UpsertWorker(h100).ok());
  Worker cpu;
  cpu.id = "laptop";
  ASSERT_TRUE(store->UpsertWorker(cpu).ok());
  const int64_t sweep = AddSweep(*store, "s", {}, 3);  // hash0: runs 1-3, hash1: runs 4-6
  Finish(*store, 1, "node-1", AttemptState::kSucceeded, 3.279);
  Finish(*store, 2, "laptop", AttemptState::kSucceeded, 3.281);
  Finish(*store, 3, "node-1", AttemptState::kCancelled, 0);  // requeued: not succeeded
  Finish(*store, 4, "node-1", AttemptState::kSucceeded, 3.290);

  std::vector<PlacedRun> runs = store->ListSucceededRunsByConfigHash({"hash0"}).value();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run.id, 1);
  EXPECT_EQ(runs[0].run.sweep_id, sweep);
  EXPECT_EQ(runs[0].config_hash, "hash0");
  EXPECT_EQ(runs[0].gpus_per_run, 1);
  EXPECT_EQ(runs[0].gpu_model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(*runs[0].run.summary.final_val_loss, 3.279);
  EXPECT_EQ(runs[1].run.id, 2);
  EXPECT_EQ(runs[1].gpu_model, "");  // the worker has no GPUs
  EXPECT_EQ(store->ListSucceededRunsByConfigHash({"hash0", "hash1"}).value().size(), 3u);
  EXPECT_TRUE(store->ListSucceededRunsByConfigHash({"nope"}).value().empty());
  EXPECT_TRUE(store->ListSucceededRunsByConfigHash({}).value().empty());
}

}  // namespace
}  // namespace ablate
