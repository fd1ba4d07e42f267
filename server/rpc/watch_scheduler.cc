// WatchScheduler: one timer thread that wakes parked watch streams onto a fixed pool.
#include "server/rpc/watch_scheduler.h"

#include <algorithm>
#include <utility>

namespace ablate {

WatchScheduler::WatchScheduler(ChangeFeed* feed, Options options)
    : feed_(feed), options_(options), pool_(std::make_unique<StreamPool>(options.threads)) {
  listener_ = feed_->AddListener([this](bool closed) { OnFeed(closed); });
  timer_ = std::thread([this] { TimerLoop(); });
}

WatchScheduler::~WatchScheduler() {
  feed_->RemoveListener(listener_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  timer_.join();
  pool_.reset();  // runs the wakes already queued (their Park calls find no timer: dropped)
}

void WatchScheduler::RunNow(Stream* stream) {
  const uint64_t version = feed_->version();
  pool_->Submit([stream, version] { stream->Wake(version); });
}

void WatchScheduler::Park(Stream* stream, uint64_t seen, Clock::time_point not_before) {
  const Clock::time_point now = Clock::now();
  bool poke = false;
  {
    absl::MutexLock lock(&mu_);
    // The feed is read under our lock (as the timer does; a listener never holds the feed's
    // lock when it takes ours): a change after this read finds feed_wait_ set and pokes.
    const bool closed = feed_->closed();
    const bool moved = closed || feed_->version() != seen;
    parked_.push_back({stream, seen, now + options_.tick, not_before, moved});
    if (!moved) feed_wait_ = true;
    const Clock::time_point due = moved ? not_before : std::max(now + options_.tick, not_before);
    poke = closed || stream->Cancelled() || due < planned_;  // sooner than the timer planned
    if (poke) poked_ = true;  // the timer's Await sees it when the lock is released
  }
}

void WatchScheduler::Poke() {
  absl::MutexLock lock(&mu_);
  poked_ = true;
}

size_t WatchScheduler::parked() const {
  absl::MutexLock lock(&mu_);
  return parked_.size();
}

void WatchScheduler::OnFeed(bool closed) {
  {
    absl::MutexLock lock(&mu_);
    // Nothing parked waits for a change: the timer need not look (the common case under load,
    // where every stream saw the feed move before it even parked).
    if (!feed_wait_ && !closed) return;
    poked_ = true;
  }
}

WatchScheduler::Clock::time_point WatchScheduler::Scan(uint64_t version, bool closed) {
  const Clock::time_point now = Clock::now();
  Clock::time_point next = Clock::time_point::max();
  bool wait_feed = false;
  std::vector<Parked> kept;
  kept.reserve(parked_.size());
  for (Parked& p : parked_) {
    if (!p.moved && (closed || version != p.seen || now >= p.deadline)) p.moved = true;
    if (closed || p.stream->Cancelled() || (p.moved && now >= p.not_before)) {
      Stream* stream = p.stream;
      pool_->Submit([stream, version] { stream->Wake(version); });
      continue;
    }
    if (p.moved) {
      next = std::min(next, p.not_before);
    } else {
      wait_feed = true;
      next = std::min(next, std::max(p.deadline, p.not_before));
    }
    kept.push_back(p);
  }
  parked_.swap(kept);
  feed_wait_ = wait_feed;
  return next;
}

void WatchScheduler::TimerLoop() {
  absl::MutexLock lock(&mu_);
  auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || poked_; };
  while (!stopping_) {
    poked_ = false;
    // The feed's lock under ours: a listener (OnFeed) takes ours with the feed's released.
    planned_ = Scan(feed_->version(), feed_->closed());
    if (planned_ == Clock::time_point::max()) {
      mu_.Await(absl::Condition(&woken));
    } else {
      mu_.AwaitWithTimeout(absl::Condition(&woken), absl::FromChrono(planned_ - Clock::now()));
    }
  }
}

}  // namespace ablate
