// The shared sweep polls behind WatchSweep; see sweep_watch_cache.h.
#include "server/rpc/sweep_watch_cache.h"

#include <utility>

namespace ablate {

SweepWatchCache::SweepWatchCache(Store* store, FillSweep fill_sweep,
                                 std::chrono::milliseconds min_interval)
    : store_(store), fill_sweep_(std::move(fill_sweep)), min_interval_(min_interval) {}

std::shared_ptr<SweepWatchCache::Entry> SweepWatchCache::Acquire(int64_t sweep_id) {
  absl::MutexLock lock(&mu_);
  std::erase_if(entries_, [](const auto& entry) { return entry.second.expired(); });
  std::weak_ptr<Entry>& slot = entries_[sweep_id];
  if (std::shared_ptr<Entry> entry = slot.lock()) return entry;
  std::shared_ptr<Entry> entry(new Entry(this, sweep_id));
  slot = entry;
  return entry;
}

uint64_t SweepWatchCache::polls() const {
  absl::MutexLock lock(&mu_);
  return polls_;
}

absl::StatusOr<std::shared_ptr<const SweepWatchCache::Snapshot>> SweepWatchCache::Entry::Get() {
  absl::MutexLock lock(&mu_);
  const auto now = std::chrono::steady_clock::now();
  if (latest_ != nullptr && now - polled_ < cache_->min_interval_) return latest_;
  {
    absl::MutexLock count(&cache_->mu_);
    ++cache_->polls_;
  }
  auto next = std::make_shared<Snapshot>();
  next->number = latest_ == nullptr ? 1 : latest_->number + 1;
  if (absl::Status s = cache_->fill_sweep_(sweep_id_, &next->sweep); !s.ok()) return s;
  RunFilter filter;
  filter.sweep_id = sweep_id_;
  filter.limit = kMaxRuns;
  absl::StatusOr<std::vector<Run>> runs = cache_->store_->ListRuns(filter);
  if (!runs.ok()) return runs.status();
  next->runs = *std::move(runs);
  // The events read before, then the new ones, keeping the latest kKeptEvents.
  int64_t after = 0;
  if (latest_ != nullptr) {
    next->events = latest_->events;
    next->events_floor = latest_->events_floor;
    after = next->events.empty() ? next->events_floor : next->events.back().id;
  }
  absl::StatusOr<std::vector<Event>> events =
      cache_->store_->ListEvents(sweep_id_, 0, after, kEventsPerPoll);
  if (!events.ok()) return events.status();
  next->events.insert(next->events.end(), std::make_move_iterator(events->begin()),
                      std::make_move_iterator(events->end()));
  if (next->events.size() > kKeptEvents) {
    const auto drop = next->events.end() - static_cast<std::ptrdiff_t>(kKeptEvents);
    next->events_floor = (drop - 1)->id;
    next->events.erase(next->events.begin(), drop);
  }
  polled_ = now;
  latest_ = std::move(next);
  return latest_;
}

}  // namespace ablate
