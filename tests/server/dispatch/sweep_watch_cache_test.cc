// SweepWatchCache: WatchSweep streams on one sweep share one store poll per interval, and the
// shared snapshot holds every recent event of the sweep from a stated floor on.
#include "server/rpc/sweep_watch_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/http/sweep_fixture.h"

namespace ablate {
namespace {

using namespace std::chrono_literals;

class SweepWatchCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = Store::Open(":memory:").value();
    testing::FixtureShape shape;
    shape.running = 1;
    sweep_ = testing::MakeFixtureSweep(*store_, "watch", shape).value();
  }
  SweepWatchCache::FillSweep Fill() {
    return [this](int64_t id, v1::Sweep* out) -> absl::Status {
      absl::StatusOr<Sweep> sweep = store_->GetSweep(id);
      if (!sweep.ok()) return sweep.status();
      out->set_id(sweep->id);
      return absl::OkStatus();
    };
  }
  int64_t AddEvent(const std::string& message) {
    Event e;
    e.sweep_id = sweep_.sweep_id;
    e.kind = "log";
    e.message = message;
    return store_->AppendEvent(e).value();
  }

  std::unique_ptr<Store> store_;
  testing::FixtureSweep sweep_;
};

TEST_F(SweepWatchCacheTest, StreamsOnASweepShareOnePollPerInterval) {
  const auto interval = 1500ms;
  SweepWatchCache cache(store_.get(), Fill(), interval);
  std::shared_ptr<SweepWatchCache::Entry> a = cache.Acquire(sweep_.sweep_id);
  std::shared_ptr<SweepWatchCache::Entry> b = cache.Acquire(sweep_.sweep_id);
  EXPECT_EQ(a, b) << "one shared poll per sweep";
  auto first = a->Get().value();
  EXPECT_EQ(b->Get().value(), first) << "within the interval, the same snapshot";
  EXPECT_EQ(cache.polls(), 1u);
  EXPECT_EQ(first->sweep.id(), sweep_.sweep_id);
  EXPECT_EQ(first->runs.size(), sweep_.runs.size());
  EXPECT_FALSE(first->events.empty());
  EXPECT_EQ(first->events_floor, 0);

  const int64_t added = AddEvent("new");
  std::this_thread::sleep_for(interval + 100ms);
  auto second = b->Get().value();
  EXPECT_EQ(a->Get().value(), second);
  EXPECT_EQ(cache.polls(), 2u);
  EXPECT_EQ(second->number, first->number + 1);
  ASSERT_FALSE(second->events.empty());
  EXPECT_EQ(second->events.back().id, added);
  EXPECT_EQ(second->events.size(), first->events.size() + 1);
}

TEST_F(SweepWatchCacheTest, KeepsTheLatestEventsFromAStatedFloor) {
  SweepWatchCache cache(store_.get(), Fill(), 0ms);
  std::shared_ptr<SweepWatchCache::Entry> entry = cache.Acquire(sweep_.sweep_id);
  int64_t last = 0;
  for (int i = 0; i < 2500; ++i) last = AddEvent("e" + std::to_string(i));
  std::shared_ptr<const SweepWatchCache::Snapshot> snap;
  for (int polls = 0; polls < 10; ++polls) {  // at most kEventsPerPoll new events per poll
    snap = entry->Get().value();
    if (!snap->events.empty() && snap->events.back().id == last) break;
  }
  ASSERT_EQ(snap->events.back().id, last);
  EXPECT_EQ(snap->events.size(), SweepWatchCache::kKeptEvents);
  EXPECT_GT(snap->events_floor, 0);
  // Every event of the sweep after the floor, none missing, none extra.
  std::vector<Event> stored = store_->ListEvents(sweep_.sweep_id, 0, snap->events_floor, 0).value();
  ASSERT_EQ(stored.size(), snap->events.size());
  for (size_t i = 0; i < stored.size(); ++i) EXPECT_EQ(stored[i].id, snap->events[i].id);
}

TEST_F(SweepWatchCacheTest, UnknownSweepAndReleasedEntries) {
  SweepWatchCache cache(store_.get(), Fill(), 10s);
  EXPECT_EQ(cache.Acquire(999)->Get().status().code(), absl::StatusCode::kNotFound);
  std::shared_ptr<SweepWatchCache::Entry> entry = cache.Acquire(sweep_.sweep_id);
  ASSERT_TRUE(entry->Get().ok());
  const uint64_t polls = cache.polls();
  entry.reset();  // the last stream on the sweep ended: its poll is dropped with it
  ASSERT_TRUE(cache.Acquire(sweep_.sweep_id)->Get().ok());
  EXPECT_EQ(cache.polls(), polls + 1) << "a new stream starts a fresh poll";
}

}  // namespace
}  // namespace ablate
