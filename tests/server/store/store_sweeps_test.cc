// Sweeps, variants and runs: round trip, list filters and paging, counts, cancel, events.
#include <algorithm>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "store_test_util.h"

namespace ablate {
namespace {

using testing::AddSweep;
using testing::MakeParts;
using testing::MakeSweep;
using testing::OpenOrDie;

class StoreSweepsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.clock = &clock_;
    store_ = OpenOrDie(":memory:", options);
    ASSERT_NE(store_, nullptr);
  }
  std::vector<ablate::Run> RunsOf(int64_t sweep_id, std::optional<RunState> state = std::nullopt) {
    RunFilter filter;
    filter.sweep_id = sweep_id;
    filter.state = state;
    return store_->ListRuns(filter).value();
  }

  ManualClock clock_{/*wall_ms=*/1'000'000};
  std::unique_ptr<Store> store_;
};

TEST_F(StoreSweepsTest, CreateSweepRoundTrip) {
  testing::SweepParts parts = MakeParts(3);
  Sweep in = MakeSweep("seed-ablations", {"softcap", "r20"});
  absl::StatusOr<int64_t> id = store_->CreateSweep(in, parts.variants, parts.runs);
  ASSERT_TRUE(id.ok()) << id.status();

  Sweep out = store_->GetSweep(*id).value();
  EXPECT_EQ(out.id, *id);
  EXPECT_EQ(out.name, in.name);
  EXPECT_EQ(out.state, SweepState::kQueued);
  EXPECT_EQ(out.spec_yaml, in.spec_yaml);
  EXPECT_EQ(out.baseline_preset, in.baseline_preset);
  EXPECT_EQ(out.scale, "tiny");
  EXPECT_EQ(out.dataset, in.dataset);
  EXPECT_DOUBLE_EQ(out.target_val_loss, 3.28);
  EXPECT_EQ(out.seeds, 2);
  EXPECT_EQ(out.priority, 5);
  EXPECT_EQ(out.max_concurrent, 4);
  EXPECT_EQ(out.max_attempts, 2);
  EXPECT_EQ(out.tags, (std::vector<std::string>{"r20", "softcap"}));
  EXPECT_EQ(out.created_ms, clock_.WallMs());
  EXPECT_EQ(out.finished_ms, 0);

  std::vector<Variant> variants = store_->ListVariants(*id).value();
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[1].name, "softcap-30");
  EXPECT_EQ(variants[1].index, 1);
  EXPECT_EQ(variants[1].sweep_id, *id);
  EXPECT_EQ(variants[1].config_json, parts.variants[1].config_json);
  EXPECT_EQ(variants[1].config_hash, "hash1");
  EXPECT_EQ(variants[1].diff_json, parts.variants[1].diff_json);

  std::vector<ablate::Run> runs = RunsOf(*id);
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[4].variant_id, variants[1].id);
  EXPECT_EQ(runs[4].variant_name, "softcap-30");
  EXPECT_EQ(runs[4].seed, 1);
  EXPECT_EQ(runs[4].state, RunState::kQueued);
  EXPECT_EQ(runs[4].current_attempt_id, 0);
  EXPECT_EQ(store_->GetRun(runs[4].id).value().seed, 1);

  std::vector<Event> events = store_->ListEvents(*id, 0, 0, 0).value();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "state");
  EXPECT_NE(events[0].message.find("submitted"), std::string::npos);
}

TEST_F(StoreSweepsTest, RejectedSweepStoresNothing) {
  testing::SweepParts parts = MakeParts();
  parts.runs.back().variant_id = 9;  // no such variant index
  absl::StatusOr<int64_t> id = store_->CreateSweep(MakeSweep("bad"), parts.variants, parts.runs);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  parts = MakeParts();
  parts.variants[1].name = "baseline";  // duplicate variant name: UNIQUE constraint
  id = store_->CreateSweep(MakeSweep("dup"), parts.variants, parts.runs);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kAlreadyExists) << id.status();
  EXPECT_TRUE(store_->ListSweeps().value().empty());
  EXPECT_TRUE(store_->ListRuns().value().empty());
  EXPECT_TRUE(store_->ListEvents(0, 0, 0, 0).value().empty());
}

TEST_F(StoreSweepsTest, UnknownIdsAreNotFound) {
  EXPECT_EQ(store_->GetSweep(42).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetRun(42).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListVariants(42).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->CountRunsByState(42).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->CancelSweep(42).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->UpdateRunSummary(42, {}).code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreSweepsTest, ListSweepsFiltersAndPagesNewestFirst) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 7; ++i) {
    ids.push_back(AddSweep(*store_, "s" + std::to_string(i), {i % 2 == 0 ? "even" : "odd"}));
  }
  ASSERT_TRUE(store_->CancelSweep(ids[3]).ok());

  std::vector<Sweep> all = store_->ListSweeps().value();
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(all.front().id, ids.back());
  EXPECT_EQ(all.back().id, ids.front());

  SweepFilter page;
  page.limit = 3;
  page.offset = 2;
  std::vector<Sweep> paged = store_->ListSweeps(page).value();
  ASSERT_EQ(paged.size(), 3u);
  EXPECT_EQ(paged[0].id, ids[4]);
  EXPECT_EQ(paged[2].id, ids[2]);

  SweepFilter even;
  even.tag = "even";
  EXPECT_EQ(store_->ListSweeps(even).value().size(), 4u);
  even.state = SweepState::kQueued;
  EXPECT_EQ(store_->ListSweeps(even).value().size(), 4u);
  SweepFilter cancelled;
  cancelled.state = SweepState::kCancelled;
  std::vector<Sweep> c = store_->ListSweeps(cancelled).value();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].id, ids[3]);
  cancelled.tag = "even";
  EXPECT_TRUE(store_->ListSweeps(cancelled).value().empty());
}

TEST_F(StoreSweepsTest, ListRunsFiltersAndPagesOldestFirst) {
  int64_t a = AddSweep(*store_, "a");
  int64_t b = AddSweep(*store_, "b");
  RunFilter all_queued;
  all_queued.state = RunState::kQueued;
  std::vector<ablate::Run> queued = store_->ListRuns(all_queued).value();
  ASSERT_EQ(queued.size(), 8u);
  EXPECT_EQ(queued.front().sweep_id, a);
  EXPECT_EQ(queued.back().sweep_id, b);
  RunFilter page;
  page.sweep_id = b;
  page.limit = 2;
  page.offset = 1;
  std::vector<ablate::Run> runs = store_->ListRuns(page).value();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, queued[5].id);
  EXPECT_EQ(runs[1].id, queued[6].id);
  EXPECT_TRUE(RunsOf(a, RunState::kRunning).empty());
}

TEST_F(StoreSweepsTest, CancelCancelsUnfinishedRunsAndReturnsActiveOnes) {
  int64_t id = AddSweep(*store_, "c");
  std::vector<ablate::Run> runs = RunsOf(id);
  Attempt assigned = store_->CreateAttempt(runs[0].id, "w1").value();
  Attempt running = store_->CreateAttempt(runs[1].id, "w2").value();
  ASSERT_TRUE(store_->MarkAttemptRunning(running.id, running.fencing_token).ok());
  Attempt done = store_->CreateAttempt(runs[2].id, "w1").value();
  ASSERT_TRUE(store_->FinishAttempt(done.id, done.fencing_token, {}).ok());
  clock_.Advance(500);

  absl::StatusOr<std::vector<int64_t>> active = store_->CancelSweep(id);
  ASSERT_TRUE(active.ok()) << active.status();
  EXPECT_EQ(*active, (std::vector<int64_t>{runs[0].id, runs[1].id}));

  Sweep sweep = store_->GetSweep(id).value();
  EXPECT_EQ(sweep.state, SweepState::kCancelled);
  EXPECT_EQ(sweep.finished_ms, clock_.WallMs());
  std::map<RunState, int> counts = store_->CountRunsByState(id).value();
  EXPECT_EQ(counts[RunState::kCancelled], 3);
  EXPECT_EQ(counts[RunState::kSucceeded], 1);
  EXPECT_EQ(counts[RunState::kQueued], 0);
  EXPECT_EQ(counts.size(), 6u);

  // The cancelled run's worker reports back; the run stays cancelled, the sweep too.
  absl::StatusOr<ablate::Run> after = store_->FinishAttempt(
      running.id, running.fencing_token, testing::ResultOf(AttemptState::kCancelled));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->state, RunState::kCancelled);
  EXPECT_EQ(store_->GetSweep(id).value().state, SweepState::kCancelled);
  EXPECT_EQ(store_->GetAttempt(assigned.id).value().state, AttemptState::kAssigned);

  absl::StatusOr<std::vector<int64_t>> again = store_->CancelSweep(id);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("already cancelled"), std::string::npos);
}

TEST_F(StoreSweepsTest, CancellingFinishedSweepIsRefused) {
  int64_t id = AddSweep(*store_, "f", {}, /*seeds=*/1);
  for (const ablate::Run& run : RunsOf(id)) {
    Attempt a = store_->CreateAttempt(run.id, "w").value();
    ASSERT_TRUE(store_->FinishAttempt(a.id, a.fencing_token, {}).ok());
  }
  EXPECT_EQ(store_->GetSweep(id).value().state, SweepState::kSucceeded);
  EXPECT_EQ(store_->CancelSweep(id).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(StoreSweepsTest, EventsPageByCursorAndFilterByRun) {
  int64_t id = AddSweep(*store_, "e");
  std::vector<ablate::Run> runs = RunsOf(id);
  for (int i = 0; i < 5; ++i) {
    Event e;
    e.sweep_id = id;
    e.run_id = i % 2 == 0 ? runs[0].id : 0;
    e.kind = "log";
    e.message = "line " + std::to_string(i);
    ASSERT_TRUE(store_->AppendEvent(e).ok());
  }
  std::vector<Event> all = store_->ListEvents(id, 0, 0, 0).value();
  ASSERT_EQ(all.size(), 6u);  // "submitted" + 5
  EXPECT_EQ(all[1].time_ms, clock_.WallMs());
  std::vector<Event> after = store_->ListEvents(id, 0, all[2].id, 2).value();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].message, "line 2");
  std::vector<Event> run_events = store_->ListEvents(id, runs[0].id, 0, 0).value();
  ASSERT_EQ(run_events.size(), 3u);
  EXPECT_EQ(run_events[2].message, "line 4");
  EXPECT_EQ(run_events[2].run_id, runs[0].id);
}

}  // namespace
}  // namespace ablate
