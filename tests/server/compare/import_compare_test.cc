// Imported record logs beside a sweep's own variants (issue 39): ImportRecordLogs stores all or
// nothing, and BuildSweepComparison(..., with) appends the imported variants as rows compared
// with the sweep's baseline: never paired by seed, times compared only on the hardware the
// importer named, outside the confound check, and leaving the own ablations' time tests as they
// were.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "server/compare/compare_queries.h"
#include "server/compare/log_import.h"
#include "server/store/store.h"
#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

constexpr const char* kSpec = R"(name: own
baseline: {script: t.py}
seeds: 3
gpus_per_run: 0
target_val_loss: 3.28
ablations:
  - {name: lr-2, args: ["--lr", "2"]}
)";

// A record log: `steps` steps at `ms` ms each, val every 10 steps, the last at `final_loss`;
// the loss crosses 3.28 at step `steps` only.
std::string Log(int steps, double ms, double final_loss, const std::string& script) {
  std::string out = script + std::string(100, '=') + "\n";
  char line[160];
  for (int s = 0; s <= steps; ++s) {
    if (s > 0) {
      std::snprintf(line, sizeof line, "step:%d/%d train_time:%.0fms step_avg:%.2fms\n", s, steps,
                    ms * s, ms);
      out += line;
    }
    if (s % 10 == 0 || s == steps) {
      const double v = s == steps ? final_loss : 3.3 + (steps - s) * 0.01;
      std::snprintf(line, sizeof line, "step:%d/%d val_loss:%.4f train_time:%.0fms\n", s, steps,
                    v, ms * s);
      out += line;
    }
  }
  return out;
}

class ImportCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> s = Store::Open(":memory:");
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
    ScriptUploads uploads = {{"t.py", ScriptUpload{"", {{"t.py", "print(1)\n", false}}}}};
    absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(kSpec, "s.yaml", uploads);
    ASSERT_TRUE(e.ok()) << e.status();
    absl::StatusOr<int64_t> id = store_->CreateSweep(e->sweep, e->variants, e->runs);
    ASSERT_TRUE(id.ok()) << id.status();
    own_ = *id;
    RunFilter filter;
    filter.sweep_id = own_;
    absl::StatusOr<std::vector<ablate::Run>> runs = store_->ListRuns(filter);
    ASSERT_TRUE(runs.ok()) << runs.status();
    for (const ablate::Run& r : *runs) {
      absl::StatusOr<Attempt> a = store_->CreateAttempt(r.id, "laptop");
      ASSERT_TRUE(a.ok()) << a.status();
      AttemptResult result;
      RunSummary summary;
      const bool lr2 = r.variant_name == "lr-2";
      summary.final_val_loss = 3.275 + 0.001 * r.seed;
      summary.reached_target = true;
      summary.target_step = 100;
      summary.mean_step_ms = (lr2 ? 39.0 : 40.0) + 0.1 * r.seed;
      summary.time_to_target_ms = 100 * *summary.mean_step_ms;
      result.summary = summary;
      ASSERT_TRUE(store_->FinishAttempt(a->id, a->fencing_token, result).ok());
    }
  }

  // Imports three logs of 100 steps at `ms` ms/step as variant "rec"; returns the sweep id.
  int64_t Import(const std::string& hardware, double ms, double target = 3.28) {
    v1::ImportLogsRequest req;
    req.set_hardware(hardware);
    req.set_target_val_loss(target);
    for (int i = 0; i < 3; ++i) {
      v1::ImportFile* f = req.add_files();
      f->set_name("rec/" + std::to_string(i) + ".txt");
      f->set_variant("rec");
      f->set_content(Log(100, ms + 0.2 * i, 3.270 + 0.001 * i, "import torch\n"));
    }
    v1::ImportLogsResponse resp;
    absl::Status s = ImportRecordLogs(*store_, req, &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp.sweep().id();
  }

  v1::CompareSweepResponse Compare(std::vector<int64_t> with) {
    absl::StatusOr<v1::CompareSweepResponse> c = BuildSweepComparison(*store_, own_, with);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : v1::CompareSweepResponse();
  }

  std::unique_ptr<Store> store_;
  int64_t own_ = 0;
};

TEST_F(ImportCompareTest, HardwareNotSaidComparesLossAndStepsButNotTimes) {
  const int64_t imported = Import("", 30.0);
  const v1::CompareSweepResponse alone = Compare({});
  const v1::CompareSweepResponse c = Compare({imported});
  ASSERT_EQ(c.variants_size(), 3);
  const v1::VariantComparison& row = c.variants(2);
  EXPECT_EQ(row.name(), "rec@imported-" + std::to_string(imported));
  ASSERT_TRUE(row.has_imported());
  EXPECT_FALSE(row.imported().like_for_like());
  EXPECT_EQ(row.imported().not_comparable(),
            "imported; hardware not said (ablate import --hardware)");
  // Its own times are shown; the comparison of times is not made.
  EXPECT_EQ(row.time_to_target_ms().n(), 3);
  EXPECT_NEAR(row.time_to_target_ms().mean(), 100 * 30.2, 1e-9);
  EXPECT_EQ(row.time_vs_baseline().verdict(), "time not comparable");
  EXPECT_FALSE(row.time_vs_baseline().has_welch());
  EXPECT_EQ(row.step_ms_vs_baseline().verdict(), "time not comparable");
  // Loss and steps are, by Welch and never paired by seed.
  EXPECT_TRUE(row.loss_vs_baseline().has_welch());
  EXPECT_FALSE(row.loss_vs_baseline().has_paired());
  EXPECT_TRUE(row.steps_vs_baseline().has_welch());
  EXPECT_EQ(row.verdict().find("time not comparable") != std::string::npos, true) << row.verdict();
  for (const v1::RunPlace& p : row.runs()) EXPECT_EQ(p.hardware(), "imported, hardware not said");
  // The own ablation's time test is what it was alone, and the confound check did not see it.
  EXPECT_DOUBLE_EQ(c.variants(1).time_vs_baseline().p_holm(),
                   alone.variants(1).time_vs_baseline().p_holm());
  EXPECT_EQ(c.confound().variants_size(), alone.confound().variants_size());
  // The record rule over the imported logs, as over any variant.
  EXPECT_EQ(row.record_rule().n(), 3);
  EXPECT_TRUE(row.record_rule().passes());
}

TEST_F(ImportCompareTest, TheSweepsOwnHardwareComparesTimes) {
  const int64_t imported = Import("cpu", 30.0);
  const v1::CompareSweepResponse c = Compare({imported});
  ASSERT_EQ(c.variants_size(), 3);
  const v1::VariantComparison& row = c.variants(2);
  EXPECT_TRUE(row.imported().like_for_like());
  EXPECT_TRUE(row.time_vs_baseline().has_welch());
  EXPECT_EQ(row.time_vs_baseline().verdict(), "faster");
  EXPECT_NEAR(row.time_vs_baseline().difference(), 100 * 30.2 - 100 * 40.1, 1e-6);
  EXPECT_EQ(row.step_ms_vs_baseline().verdict(), "faster steps");
}

TEST_F(ImportCompareTest, OnlyImportedSweepsOfTheSameTargetGoBeside) {
  absl::StatusOr<v1::CompareSweepResponse> self = BuildSweepComparison(*store_, own_, std::vector<int64_t>{own_});
  ASSERT_FALSE(self.ok());
  EXPECT_NE(self.status().message().find("ran on this cluster"), std::string::npos);
  const int64_t other = Import("", 30.0, 3.5);
  absl::StatusOr<v1::CompareSweepResponse> c = BuildSweepComparison(*store_, own_, std::vector<int64_t>{other});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("import the logs again with --target 3.28"),
            std::string::npos)
      << c.status();
}

TEST_F(ImportCompareTest, ABadLogStoresNothingUnlessSkipBad) {
  v1::ImportLogsRequest req;
  for (const std::string& content :
       {Log(100, 30, 3.27, "a\n"), Log(100, 30, 3.27, "b\n") + "step:5/100 val_loss:3.3\n"}) {
    v1::ImportFile* f = req.add_files();
    f->set_name("x" + std::to_string(req.files_size()) + ".txt");
    f->set_variant("rec");
    f->set_content(content);
  }
  const size_t before = store_->ListSweeps()->size();
  v1::ImportLogsResponse resp;
  absl::Status s = ImportRecordLogs(*store_, req, &resp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("1 of 2 logs cannot be imported, so none was stored"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("x2.txt:"), std::string::npos) << s;
  EXPECT_EQ(store_->ListSweeps()->size(), before);
  req.set_skip_bad(true);
  v1::ImportLogsResponse kept;
  ASSERT_TRUE(ImportRecordLogs(*store_, req, &kept).ok());
  EXPECT_EQ(kept.runs_size(), 1);
  ASSERT_EQ(kept.skipped_size(), 1);
  EXPECT_EQ(store_->ListSweeps()->size(), before + 1);
}

}  // namespace
}  // namespace ablate
