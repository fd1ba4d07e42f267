// The confound check's grouping (issue 23): which variants must share the baseline's ms/step.
// Knob variants by their knobs (trainer/config/step_work.h); a script variant only when its spec
// declares `same_work: true`. The declaration goes through the store, and the comparison then
// tests the declared ablation's ms/step against the baseline's, and only that one.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "server/compare/compare_queries.h"
#include "server/store/store.h"
#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

constexpr const char* kScriptSpec = R"(name: same-work
baseline: {script: t.py, args: ["--lr", "1"]}
seeds: 3
gpus_per_run: 0
ablations:
  - {name: lr-2, args: ["--lr", "2"], same_work: true}
  - {name: lr-3, args: ["--lr", "3"]}
  - {name: lr-4, args: ["--lr", "4"], same_work: false}
)";

ScriptUploads Uploads() {
  return {{"t.py",
           ScriptUpload{"", {{"t.py", "print('step:1/1 val_loss:3 train_time:1ms')\n", false}}}}};
}

std::map<std::string, bool> Grouping(const std::vector<Variant>& variants) {
  std::map<std::string, bool> out;
  for (const Variant& v : variants) out[v.name] = DoesBaselineWork(v);
  return out;
}

TEST(SameWorkTest, ScriptVariantsDoTheBaselinesWorkOnlyWhenDeclared) {
  absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(kScriptSpec, "s.yaml", Uploads());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(Grouping(e->variants),
            (std::map<std::string, bool>{{"baseline", true},
                                         {"lr-2", true},      // declared
                                         {"lr-3", false},     // args changed, nothing declared
                                         {"lr-4", false}}));  // declared not
}

TEST(SameWorkTest, KnobVariantsFollowTheirKnobs) {
  absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(R"(name: knobs
baseline: {preset: r20-sub3min, scale: tiny}
ablations:
  - {name: eps, set: {adam.eps: 1.0e-8}}
  - {name: no-unet, set: {unet_skips: false}}
)",
                                                   "s.yaml");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(Grouping(e->variants),
            (std::map<std::string, bool>{{"baseline", true}, {"eps", true}, {"no-unet", false}}));
  // A declaration that contradicts the knobs cannot be made.
  absl::StatusOr<ExpandedSweep> bad = ParseSweepSpec(R"(name: knobs
baseline: {preset: r20-sub3min, scale: tiny}
ablations:
  - {name: no-unet, set: {unet_skips: false}, same_work: true}
)",
                                                     "s.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "s.yaml:4:58: ablations[0].same_work: not for a built-in sweep: "),
            std::string_view::npos)
      << bad.status();
}

TEST(SameWorkTest, TheStoreKeepsTheDeclarationAndTheConfoundCheckTestsIt) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(":memory:");
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(kScriptSpec, "s.yaml", Uploads());
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<int64_t> id = (*store)->CreateSweep(e->sweep, e->variants, e->runs);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<std::vector<Variant>> stored = (*store)->ListVariants(*id);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(Grouping(*stored), Grouping(e->variants));

  // The declared ablation's steps are ~30% slower than the baseline's; the others' even more, but
  // they are not declared to do the same work, so they are not in the test.
  const std::map<std::string, double> ms_per_step = {
      {"baseline", 40.0}, {"lr-2", 52.0}, {"lr-3", 80.0}, {"lr-4", 90.0}};
  RunFilter filter;
  filter.sweep_id = *id;
  absl::StatusOr<std::vector<ablate::Run>> runs = (*store)->ListRuns(filter);
  ASSERT_TRUE(runs.ok()) << runs.status();
  for (const ablate::Run& r : *runs) {
    absl::StatusOr<Attempt> a = (*store)->CreateAttempt(r.id, "w");
    ASSERT_TRUE(a.ok()) << a.status();
    AttemptResult result;
    result.state = AttemptState::kSucceeded;
    RunSummary summary;
    summary.final_val_loss = 3.2;
    summary.reached_target = true;
    summary.mean_step_ms = ms_per_step.at(r.variant_name) + 0.4 * r.seed;
    summary.target_step = 300;
    summary.time_to_target_ms = 300 * *summary.mean_step_ms;
    result.summary = summary;
    ASSERT_TRUE((*store)->FinishAttempt(a->id, a->fencing_token, result).ok());
  }
  absl::StatusOr<v1::CompareSweepResponse> c = BuildSweepComparison(**store, *id);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->confound().tested()) << c->confound().message();
  EXPECT_TRUE(c->confound().confounded()) << c->confound().message();
  EXPECT_EQ(
      std::vector<std::string>(c->confound().variants().begin(), c->confound().variants().end()),
      (std::vector<std::string>{"baseline", "lr-2"}));
}

// Without the declaration a script sweep's check has the baseline alone and tests nothing.
TEST(SameWorkTest, WithoutADeclarationAScriptSweepsCheckTestsNothing) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(":memory:");
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<ExpandedSweep> e = ParseSweepSpec(R"(name: undeclared
baseline: {script: t.py, args: ["--lr", "1"]}
seeds: 2
gpus_per_run: 0
ablations:
  - {name: lr-2, args: ["--lr", "2"]}
)",
                                                   "s.yaml", Uploads());
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<int64_t> id = (*store)->CreateSweep(e->sweep, e->variants, e->runs);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::CompareSweepResponse> c = BuildSweepComparison(**store, *id);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->confound().tested()) << c->confound().message();
}

}  // namespace
}  // namespace ablate
