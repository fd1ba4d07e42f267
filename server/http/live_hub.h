// One poll of the store per live scope, shared by every dashboard page that follows it.
//
// A page on a sweep used to poll the sweep, its runs and each run's new points on its own, up to
// four times a second: a hundred pages on a 200-run sweep asked tens of thousands of reads a
// second while the writer needed the same cores. Here each scope (the sweeps list, the workers
// list, one sweep) has one SharedScope; whichever page wakes first after the minimum interval
// polls the store for everyone, and the changes it found are kept as one numbered generation of
// items that each page takes from at its own pace. A run page follows its sweep's scope, filtered
// to its run. A page's first poll is a snapshot of the scope's current state; points stored
// before it are read by the page from the metrics API (live_stream.h).
//
// Memory is bounded: a generation is dropped once every page has taken it, or after `max_lag`
// (a minute) when a page stopped reading; that page then gets RESOURCE_EXHAUSTED and its stream
// ends (the browser reconnects and reloads).
#ifndef ABLATE_SERVER_HTTP_LIVE_HUB_H_
#define ABLATE_SERVER_HTTP_LIVE_HUB_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "server/core/change_feed.h"
#include "server/http/api_queries.h"
#include "server/http/metrics_json.h"

namespace ablate {

struct LiveScope {
  enum class Kind { kSweeps, kSweep, kRun, kWorkers };
  Kind kind = Kind::kSweeps;
  int64_t id = 0;                       // the sweep (kSweep) or run (kRun)
  SeriesSet series = SeriesSet::All();  // columns of `points` messages
};

struct SseMessage {
  std::string event;
  std::string data;  // one line
};

// "event: <event>\ndata: <data>\n\n".
std::string FormatSse(const SseMessage& m);

class SharedScope;

// Thread-safe. `queries` (and `feed`, when given) must outlive it and every LiveStream on it.
class LiveHub {
 public:
  // `feed`: a scope is polled again only when the ChangeFeed moved (or a second passed); null
  // polls whenever asked. `min_interval`: a scope is polled at most this often (0 = every ask).
  // `max_lag`: a generation is kept this long at most for a page that has not taken it.
  LiveHub(ApiQueries* queries, const ChangeFeed* feed, std::chrono::milliseconds min_interval,
          std::chrono::milliseconds max_lag = std::chrono::minutes(1));
  ~LiveHub();

  ApiQueries* queries() const { return queries_; }

  // The scope a page of `scope` follows (the sweep's, for a run page), created on first use.
  // NOT_FOUND for an unknown run.
  absl::StatusOr<std::shared_ptr<SharedScope>> Find(const LiveScope& scope);

  // Store polls made so far, over all scopes (benchmarks and tests).
  uint64_t polls() const { return polls_.load(); }

 private:
  friend class SharedScope;
  using Key = std::pair<int, int64_t>;

  ApiQueries* const queries_;
  const ChangeFeed* const feed_;
  const std::chrono::milliseconds min_interval_;
  const std::chrono::milliseconds max_lag_;
  std::mutex mu_;
  std::map<Key, std::weak_ptr<SharedScope>> scopes_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> polls_{0};
};

// One scope's shared poll and the generations of changes it found. Thread-safe; LiveStream is
// its only user.
class SharedScope {
 public:
  enum class Kind { kSweeps, kWorkers, kSweep };
  SharedScope(LiveHub* hub, Kind kind, int64_t sweep_id);

  // What one page takes from the scope.
  struct View {
    LiveScope::Kind kind;
    int64_t run_id = 0;  // run pages
    SeriesSet series;
  };

  // Polls the store when due, registers the page and returns its snapshot: the scope's current
  // sweeps, runs or workers and its latest events. Sets `cursor` to the generation after which
  // the page's changes start. NOT_FOUND when the sweep is unknown.
  absl::StatusOr<std::vector<SseMessage>> Join(const View& view, uint64_t* cursor);
  // Polls the store when due and returns the page's items of the generations after `cursor`,
  // advancing it. RESOURCE_EXHAUSTED when the page fell more than the hub's max_lag behind.
  absl::StatusOr<std::vector<SseMessage>> Take(const View& view, uint64_t* cursor);
  void Leave(const View& view, uint64_t cursor);

  // True when the last poll left changes unread (a per-poll cap): poll again without waiting.
  bool backlog() const;

 private:
  using Clock = std::chrono::steady_clock;

  // One change, in the order pages receive them.
  struct Item {
    enum class Kind { kSweepOfList, kSweep, kRun, kRunDetail, kWorkers, kEvent, kPoints };
    Item(Kind k, int64_t run, std::string message)
        : kind(k), run_id(run), json(std::move(message)) {}
    Item(int64_t run, int64_t attempt, bool new_attempt, std::vector<MetricPoint> new_points)
        : kind(Kind::kPoints),
          run_id(run),
          attempt_id(attempt),
          reset(new_attempt),
          points(std::move(new_points)) {}
    Kind kind;
    int64_t run_id = 0;  // kRun, kRunDetail, kPoints; the event's run for kEvent
    std::string json;    // all but kPoints
    // kPoints: a run's new points; reset = the run started a new attempt.
    int64_t attempt_id = 0;
    bool reset = false;
    std::vector<MetricPoint> points;
    std::map<unsigned, std::string> formatted;  // by SeriesSet::Bits(), built on first use
  };
  struct Generation {
    uint64_t number = 0;
    Clock::time_point at;
    std::vector<Item> items;
  };
  // Where the points of one run polled so far end.
  struct Cursor {
    int64_t attempt_id = 0;
    int64_t last_step = INT64_MIN;
    bool done = false;  // the run was terminal when its last points were read
  };
  struct RunState {
    std::string json;    // ListRuns shape, as last polled
    std::string detail;  // GetRun shape, while a run page follows the run
    Clock::time_point detail_at;
  };

  // Polls the store when the interval has passed (and the feed moved), or the last poll left a
  // backlog.
  absl::Status RefreshLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PollSweeps(std::vector<Item>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PollWorkers(std::vector<Item>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A sweep scope's poll: the sweep (when sweep pages follow it), then the four below.
  absl::Status PollSweep(std::vector<Item>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs whose ListRuns shape changed; returns their ids.
  std::set<int64_t> PollRuns(const std::vector<Run>& runs, std::vector<Item>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // New points of the runs' current attempts (the first poll only places the cursors).
  absl::Status PollPoints(const std::vector<Run>& runs, bool first, std::vector<Item>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Events after the last one polled; returns the runs they name (none on the first poll).
  absl::StatusOr<std::set<int64_t>> PollEvents(bool first, std::vector<Item>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // GetRun shapes for run pages: on the first poll, for changed or evented runs, or when stale.
  absl::Status PollRunDetails(bool first, const std::set<int64_t>& changed,
                              const std::set<int64_t>& evented, std::vector<Item>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PollSweepMessage(std::vector<Item>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PollRunDetail(int64_t run_id, std::vector<Item>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Wants(const View& view, const Item& item) const;
  SseMessage MessageOf(const View& view, Item& item) const;
  void TrimLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<Event>> LatestEvents(const View& view) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  LiveHub* const hub_;
  const Kind kind_;
  const int64_t sweep_id_;

  mutable std::mutex mu_;
  bool polled_ ABSL_GUARDED_BY(mu_) = false;
  bool backlog_ ABSL_GUARDED_BY(mu_) = false;
  Clock::time_point last_poll_ ABSL_GUARDED_BY(mu_);
  uint64_t last_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // the number of the newest generation
  std::deque<Generation> log_ ABSL_GUARDED_BY(mu_);
  std::multiset<uint64_t> cursors_ ABSL_GUARDED_BY(mu_);  // of the pages on the scope
  int sweep_pages_ ABSL_GUARDED_BY(mu_) = 0;

  // The scope's current state, for snapshots.
  std::vector<std::pair<int64_t, std::string>> sweeps_ ABSL_GUARDED_BY(mu_);  // kSweeps: in order
  std::string workers_ ABSL_GUARDED_BY(mu_);  // kWorkers
  std::string sweep_ ABSL_GUARDED_BY(mu_);    // kSweep: GetSweep shape, for sweep pages
  std::map<int64_t, RunState> runs_ ABSL_GUARDED_BY(mu_);         // kSweep, by run id
  std::map<int64_t, Cursor> point_cursors_ ABSL_GUARDED_BY(mu_);  // kSweep, by run id
  std::map<int64_t, int> detail_pages_ ABSL_GUARDED_BY(mu_);      // kSweep: run pages by run id
  int64_t last_event_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_LIVE_HUB_H_
