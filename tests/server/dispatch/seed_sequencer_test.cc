// Sequential seeds through a real in-memory store: later blocks wait for earlier ones, settled
// ablations get no more seeds (their queued runs are cancelled with the reason), the baseline
// runs as long as any ablation is open, and compare reports the stopping rule's verdicts.
#include "server/dispatch/seed_sequencer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "server/compare/compare_queries.h"
#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

constexpr const char* kSpec = R"(name: sequential
baseline: {preset: r9-shortcuts, scale: tiny}
seeds: {min: 3, max: 6}
gpus_per_run: 0
ablations:
  - {name: much-faster, set: {muon.lr: 0.03}}
  - {name: same, set: {adam.eps: 1.0e-10}}
)";

class SeedSequencerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(":memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(kSpec, "spec.yaml");
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->sweep.seeds_min, 3);
    EXPECT_EQ(e->sweep.seeds, 6);
    EXPECT_EQ(e->runs.size(), 18u) << "every seed up to max is stored, held until needed";
    absl::StatusOr<int64_t> id = store_->CreateSweep(e->sweep, e->variants, e->runs);
    ASSERT_TRUE(id.ok()) << id.status();
    sweep_id_ = *id;
  }

  Sweep GetSweep() { return store_->GetSweep(sweep_id_).value(); }

  std::vector<ablate::Run> Runs() {
    RunFilter f;
    f.sweep_id = sweep_id_;
    return store_->ListRuns(f).value();
  }

  // Runs every released run, with a time to target by variant (much-faster is 10% faster,
  // with a spread of 0.1%).
  void RunReleased(const SequencedRuns& s) {
    const std::map<std::string, double> mean = {
        {"baseline", 100000}, {"much-faster", 90000}, {"same", 100000}};
    for (const ablate::Run& r : Runs()) {
      if (!s.released.count(r.id)) continue;
      absl::StatusOr<Attempt> a = store_->CreateAttempt(r.id, "w");
      ASSERT_TRUE(a.ok()) << a.status();
      AttemptResult result;
      result.state = AttemptState::kSucceeded;
      RunSummary summary;
      summary.final_val_loss = 2.19;
      summary.reached_target = true;
      summary.time_to_target_ms = mean.at(r.variant_name) + 100.0 * ((r.seed * 7 + 3) % 5 - 2);
      // Every variant does the same work per step (knobs of StepWork::kSame): the same ms/step,
      // so much-faster is faster by needing fewer steps.
      summary.mean_step_ms = 333.3 + 0.5 * ((r.seed * 3 + 1) % 4);
      summary.target_step = std::llround(*summary.time_to_target_ms / *summary.mean_step_ms);
      result.summary = summary;
      ASSERT_TRUE(store_->FinishAttempt(a->id, a->fencing_token, result).ok());
    }
  }

  // Seeds of the released runs, by variant.
  std::map<std::string, std::set<int>> Released(const SequencedRuns& s) {
    std::map<std::string, std::set<int>> out;
    for (const ablate::Run& r : Runs()) {
      if (s.released.count(r.id)) out[r.variant_name].insert(r.seed);
    }
    return out;
  }

  std::unique_ptr<Store> store_;
  int64_t sweep_id_ = 0;
};

TEST_F(SeedSequencerTest, BlocksWaitAndSettledVariantsStop) {
  SeedSequencer sequencer(store_.get());
  // Seeds 0..2 go out at once; 3..5 wait for the earlier blocks.
  absl::StatusOr<SequencedRuns> s = sequencer.Sequence(GetSweep());
  ASSERT_TRUE(s.ok()) << s.status();
  const std::set<int> first = {0, 1, 2};
  EXPECT_EQ(Released(*s), (std::map<std::string, std::set<int>>{
                              {"baseline", first}, {"much-faster", first}, {"same", first}}));
  EXPECT_EQ(s->held.size(), 9u);
  EXPECT_NE(s->held.begin()->second.find("sequential seeds: block 3 starts when block 2"),
            std::string::npos)
      << s->held.begin()->second;
  RunReleased(*s);

  // After 3 blocks much-faster is settled (10% at a spread of 0.1%): its later seeds are not needed.
  s = sequencer.Sequence(GetSweep());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->skipped, 3);
  EXPECT_EQ(Released(*s), (std::map<std::string, std::set<int>>{{"baseline", {3}}, {"same", {3}}}));
  for (const ablate::Run& r : Runs()) {
    if (r.variant_name == "much-faster" && r.seed >= 3) {
      EXPECT_EQ(r.state, RunState::kCancelled);
      EXPECT_NE(r.error.find("not needed: the verdict was settled after 3 seeds"),
                std::string::npos);
    }
  }
  // "same" never crosses: it goes on to the most seeds, one block at a time.
  for (int block = 3; block < 6; ++block) {
    EXPECT_EQ(Released(*s)["same"], std::set<int>{block});
    RunReleased(*s);
    s = sequencer.Sequence(GetSweep());
    ASSERT_TRUE(s.ok()) << s.status();
  }
  EXPECT_TRUE(s->released.empty());
  EXPECT_EQ(GetSweep().state, SweepState::kSucceeded);

  absl::StatusOr<v1::CompareSweepResponse> c = BuildSweepComparison(*store_, sweep_id_);
  ASSERT_TRUE(c.ok()) << c.status();
  std::map<std::string, v1::VariantComparison> by_name;
  for (const v1::VariantComparison& v : c->variants()) by_name[v.name()] = v;
  EXPECT_EQ(by_name["much-faster"].sequential().verdict(), "faster");
  EXPECT_EQ(by_name["much-faster"].sequential().seeds(), 3);
  EXPECT_EQ(by_name["much-faster"].time_vs_baseline().verdict(), "faster");
  EXPECT_EQ(by_name["same"].sequential().verdict(), "no difference");
  EXPECT_EQ(by_name["same"].sequential().seeds(), 6);
  EXPECT_EQ(by_name["same"].time_vs_baseline().verdict(), "no difference");
  EXPECT_EQ(by_name["baseline"].n(), 6);
  EXPECT_FALSE(c->confound().confounded()) << c->confound().message();
}

TEST_F(SeedSequencerTest, FixedSeedsSpecsKeepTheirMeaning) {
  absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(
      "name: fixed\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: 4\n", "spec.yaml");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->sweep.seeds, 4);
  EXPECT_EQ(e->sweep.seeds_min, 0);
  absl::StatusOr<ExpandedSweep> bad = ParseSweepSpec(
      "name: bad\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: {min: 5, max: 3}\n",
      "spec.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("seeds.max: max 3 is below min 5"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace ablate
