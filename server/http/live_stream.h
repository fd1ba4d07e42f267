// Live updates for one dashboard page (server-sent events): what changed in the page's scope
// since the previous poll, as named messages. The HTTP layer polls it whenever the ChangeFeed
// moves and writes the messages to the page's EventSource. The store is read by the scope's
// poll that every page on it shares (live_hub.h). No HTTP library types.
//
// Messages (data is one line of JSON):
//   sweep    a v1.Sweep (ListSweeps shape for the sweeps page, GetSweep shape for a sweep page)
//   run      a v1.Run (ListRuns shape on a sweep page, GetRun shape on a run page)
//   workers  a v1.ListWorkersResponse
//   event    a v1.Event
//   points   {"run_id":N,"attempt_id":N,"reset":bool,"columns":{...}} (metrics_json.h): points
//            stored since the previous poll; reset means the run started a new attempt and the
//            page must drop the points it had for the run
//   ready    {"now_ms":N} once, after the first poll's messages
#ifndef ABLATE_SERVER_HTTP_LIVE_STREAM_H_
#define ABLATE_SERVER_HTTP_LIVE_STREAM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "server/http/live_hub.h"

namespace ablate {

// UNAVAILABLE (503) for a page beyond `max` open live streams.
absl::Status TooManyLiveStreams(int max);

// Not thread-safe: one per connection. `hub` must outlive it.
class LiveStream {
 public:
  // `clock` (not owned, outlives the stream) stamps the "ready" message with its WallMs.
  LiveStream(LiveHub* hub, LiveScope scope, const Clock* clock = &SystemClock::Get());
  ~LiveStream();
  LiveStream(const LiveStream&) = delete;
  LiveStream& operator=(const LiveStream&) = delete;

  // The first call returns the scope's current sweeps, runs or workers and its latest events, then
  // `ready`. Points already stored at the first call are not sent (the page reads those from the
  // metrics API after `ready`; points stored in between may come twice, same step, same values).
  // Later calls return only what changed. NOT_FOUND when the scope's sweep or run is unknown;
  // RESOURCE_EXHAUSTED when the page stopped reading for longer than the hub's max_lag.
  absl::StatusOr<std::vector<SseMessage>> Poll();

  // True when the last poll left changes unread (a per-poll cap); poll again without waiting.
  bool backlog() const { return shared_ != nullptr && shared_->backlog(); }

 private:
  LiveHub* const hub_;
  const Clock* const clock_;
  const LiveScope scope_;
  const SharedScope::View view_;
  std::shared_ptr<SharedScope> shared_;
  bool joined_ = false;
  uint64_t cursor_ = 0;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_LIVE_STREAM_H_
