// The dashboard's live pages (GET /api/live/..., server-sent events) without a thread each
// (issue 28). The connection gate hands a plain-HTTP live request here once it arrived whole; from
// then on the page's connection lives in one epoll thread that writes what its polls produced,
// non-blocking, and notices when the page goes away. Between polls a page is parked in a
// WatchScheduler (the one the gRPC watch streams use): woken when the change feed moves (at most
// every `min_interval`, at least every second) and polled on the scheduler's fixed pool. So the
// coordinator's threads stay the same for 1 or 2,000 open pages: this loop, the scheduler's timer
// and its pool.
//
// What a page receives is what the thread-per-page stream sent (live_stream.h): the response head
// with the API's headers, "retry: 2000", the first poll's messages and "ready", then the changes,
// a keepalive comment on a stream idle for `keepalive`, an "error" message and the end when its
// poll fails (a page that fell a minute behind), and the end of the stream at Stop. The body is
// chunked, as before. A page that stops reading gets no further polls until its output drained;
// one whose output has not moved for `stall_limit` is dropped.
//
// HTTPS connections cannot be read before their handshake; those stay on the thread pool
// (live_routes.cc), which the server sizes for them.
#ifndef ABLATE_SERVER_HTTP_LIVE_SERVER_H_
#define ABLATE_SERVER_HTTP_LIVE_SERVER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/core/change_feed.h"
#include "server/http/live_hub.h"
#include "server/http/login_throttle.h"
#include "server/rpc/watch_scheduler.h"

namespace ablate {

struct LiveServerOptions {
  std::string client_token;                  // "" requires none
  const Clock* clock = &SystemClock::Get();  // X-Ablate-Now-Ms and "ready"; not owned
  std::chrono::milliseconds min_interval{250};
  std::chrono::milliseconds keepalive{15000};
  std::chrono::milliseconds stall_limit{60000};
  int max_streams = 1000;  // pages open at once (with those on the thread pool); more get 503
  // Added to every response head (the dashboard's security headers).
  std::vector<std::pair<std::string, std::string>> headers;
};

// Thread-safe. `hub`, `feed`, `throttle` and `open_streams` must outlive it.
class LiveServer {
 public:
  LiveServer(LiveServerOptions options, LiveHub* hub, ChangeFeed* feed, LoginThrottle* throttle,
             std::atomic<int>* open_streams);
  ~LiveServer();  // Stop()
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  // Takes connection `fd` from client `address`, whose whole request head is waiting in the
  // socket (the connection gate peeked at it and IsLiveRequest said yes). Answers an unusable
  // request at once (400, 401, 404, 429, 503 as the API does); serves the others until the page
  // goes or Stop. Calls `closed` once the connection is closed.
  void Take(int fd, const std::string& address, std::function<void()> closed);

  // Ends every page's stream (the end of the chunked body, within one poll), closes them, and
  // stops the thread and the scheduler. Idempotent. Take after Stop closes the connection.
  void Stop();

  int open() const;  // pages open now

 private:
  class Page;
  // How a request is refused beyond its status: header lines (Retry-After), and an HTTP status
  // other than HttpStatusOf's (429 for a throttled token).
  struct Refusal {
    std::string headers;
    int http = 0;
  };
  // Reads and checks the request; OK when the page may open with *scope.
  absl::Status Admit(int fd, const std::string& address, LiveScope* scope, Refusal* refusal);
  // A response head up to its blank line; `extra` holds whole header lines.
  std::string Head(int status, std::string_view content_type, std::string_view extra) const;
  std::string ErrorReply(const absl::Status& status, const Refusal& refusal) const;
  void Refuse(int fd, const absl::Status& status, const Refusal& refusal);
  void Queue(std::shared_ptr<Page> page);  // any thread: the loop looks at the page next

  // The loop's (and Stop's once the loop ended).
  void Loop();
  std::shared_ptr<Page> Find(uint64_t id);
  void OnSocket(Page& page, uint32_t events);
  void Serve(Page& page);  // flushes or closes a page the loop holds
  void Flush(Page& page);
  void WantOut(Page& page, bool want);
  void Gone(Page& page);
  void Close(Page& page);
  void DropStalled();

  const LiveServerOptions options_;
  LiveHub* const hub_;
  ChangeFeed* const feed_;
  LoginThrottle* const throttle_;
  std::atomic<int>* const open_streams_;
  std::atomic<bool> stopping_{false};
  int epoll_fd_ = -1;
  int wake_fd_ = -1;

  // Lock order: a page's lock, then this one.
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;  // the loop ends
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::shared_ptr<Page>> pages_ ABSL_GUARDED_BY(mu_);  // open, by id
  std::vector<std::shared_ptr<Page>> queued_ ABSL_GUARDED_BY(mu_);        // for the loop
  // Set before the loop starts; reset by Stop after the loop ended, when no page can park.
  std::unique_ptr<WatchScheduler> scheduler_;
  std::thread loop_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_LIVE_SERVER_H_
