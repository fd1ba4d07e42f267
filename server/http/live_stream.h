// Live updates for one dashboard page (server-sent events): what changed in the page's scope
// since the previous poll, as named messages. The HTTP layer polls it whenever the ChangeFeed
// moves and writes the messages to the page's EventSource. No HTTP library types.
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
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

// Not thread-safe: one per connection. `queries` must outlive it.
class LiveStream {
 public:
  LiveStream(ApiQueries* queries, LiveScope scope);

  // The first call returns the scope's current sweeps, runs or workers and its latest events, then
  // `ready`. Points already stored at the first call are not sent (the page reads those from the
  // metrics API after `ready`; points stored in between may come twice, same step, same values).
  // Later calls return only what changed. NOT_FOUND when the scope's sweep or run is unknown.
  absl::StatusOr<std::vector<SseMessage>> Poll();

  // True when the last Poll left points unsent (a per-poll cap); poll again without waiting.
  bool backlog() const { return backlog_; }

 private:
  // Where the points sent so far of one run end.
  struct Cursor {
    int64_t attempt_id = 0;
    int64_t last_step = INT64_MIN;
    bool done = false;  // the run was terminal when its last points were read
  };

  absl::Status PollSweeps(std::vector<SseMessage>* out);
  absl::Status PollSweep(std::vector<SseMessage>* out);
  absl::Status PollRun(std::vector<SseMessage>* out);
  absl::Status PollWorkers(std::vector<SseMessage>* out);
  absl::Status PollEvents(int64_t sweep_id, int64_t run_id, std::vector<SseMessage>* out);
  absl::Status PollPoints(const Run& run, std::vector<SseMessage>* out);
  // Adds a message when `json` differs from what was last sent under `key`.
  void SendIfChanged(const std::string& key, const std::string& event, std::string json,
                     std::vector<SseMessage>* out);

  ApiQueries* const queries_;
  const LiveScope scope_;
  bool first_ = true;
  bool backlog_ = false;
  int64_t last_event_id_ = 0;
  std::map<std::string, std::string> sent_;  // key ("sweep 3", "run 7") -> last JSON sent
  std::map<int64_t, Cursor> cursors_;        // by run id
};

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_LIVE_STREAM_H_
