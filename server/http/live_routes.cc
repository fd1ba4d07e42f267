// Server-sent events over HTTPS (plain HTTP pages are served by live_server.h without a thread
// each): one LiveStream per connection, pumped by httplib's chunked content provider on the
// connection's thread. The stream waits on the ChangeFeed, so a change reaches
// the page within one poll interval, and ends at once when the feed is closed (shutdown).
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/http/http_routes.h"
#include "server/http/json_reply.h"
#include "server/http/live_request.h"
#include "server/http/live_stream.h"

namespace ablate {
namespace {

using SteadyClock = std::chrono::steady_clock;

// One open event stream. Counts itself in ctx.live_streams while it lives.
class LiveSession {
 public:
  LiveSession(const RouteContext& ctx, LiveScope scope)
      : ctx_(ctx),
        stream_(ctx.live_hub, std::move(scope), ctx.options->clock),
        version_(ctx.feed->version()) {
    ctx_.live_streams->fetch_add(1);
  }
  ~LiveSession() { ctx_.live_streams->fetch_sub(1); }

  // The first poll, before the response starts, so that an unknown id is a plain 404.
  absl::Status Open() {
    pending_ = "retry: 2000\n\n";
    return PollInto();
  }

  // One turn of the provider: writes what is pending, waits for a change, polls. Returns false
  // when the client went away.
  bool Pump(httplib::DataSink& sink) {
    if (!pending_.empty()) {
      if (!sink.write(pending_.data(), pending_.size())) return false;
      pending_.clear();
      last_write_ = SteadyClock::now();
    }
    if (!Stopping()) WaitForChange();
    if (Stopping()) {
      sink.done();
      return true;
    }
    if (absl::Status s = PollInto(); !s.ok()) {
      pending_ += FormatSse({"error", ErrorJson(s)});
      if (!sink.write(pending_.data(), pending_.size())) return false;
      sink.done();
      return true;
    }
    if (pending_.empty() && SteadyClock::now() - last_write_ >= ctx_.options->live_keepalive) {
      pending_ = ": keepalive\n\n";
    }
    return true;
  }

 private:
  bool Stopping() const { return ctx_.stopping->load() || ctx_.feed->closed(); }

  absl::Status PollInto() {
    absl::StatusOr<std::vector<SseMessage>> messages = stream_.Poll();
    last_poll_ = SteadyClock::now();
    if (!messages.ok()) return messages.status();
    for (const SseMessage& m : *messages) pending_ += FormatSse(m);
    return absl::OkStatus();
  }

  // Until the feed moves (at most a second, so that heartbeat ages refresh), and then at least
  // the minimum interval after the previous poll, so that bursts of metric batches coalesce.
  // The interval is slept in one piece (at most kStopCheck at a time): with hundreds of pages
  // open, waking every few milliseconds to look at the clock costs more than the polls.
  void WaitForChange() {
    constexpr auto kStopCheck = std::chrono::milliseconds(250);
    if (!stream_.backlog()) version_ = ctx_.feed->WaitPast(version_, std::chrono::seconds(1));
    auto next = last_poll_ + ctx_.options->live_min_interval;
    while (SteadyClock::now() < next && !Stopping()) {
      std::this_thread::sleep_for(
          std::min<SteadyClock::duration>(next - SteadyClock::now(), kStopCheck));
    }
  }

  const RouteContext ctx_;
  LiveStream stream_;
  uint64_t version_;
  std::string pending_;
  SteadyClock::time_point last_write_ = SteadyClock::now();
  SteadyClock::time_point last_poll_;
};

void ServeLive(const RouteContext& ctx, LiveScope scope, httplib::Response& res) {
  if (ctx.live_streams->load() >= ctx.options->max_live_streams) {
    ReplyJson(res, TooManyLiveStreams(ctx.options->max_live_streams));
    return;
  }
  auto session = std::make_shared<LiveSession>(ctx, std::move(scope));
  if (absl::Status s = session->Open(); !s.ok()) {
    ReplyJson(res, s);
    return;
  }
  res.set_header("Cache-Control", "no-store");
  res.set_chunked_content_provider("text/event-stream", [session](size_t, httplib::DataSink& sink) {
    return session->Pump(sink);
  });
}

// The scope of the request's path and query (live_request.h: the same rules on both paths).
void Live(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  LiveRequest request;
  request.method = req.method;
  request.path = req.path;
  for (const auto& [name, value] : req.params) request.query.emplace_back(name, value);
  absl::StatusOr<LiveScope> scope = LiveScopeOf(request);
  if (!scope.ok()) return ReplyJson(res, scope.status());
  ServeLive(ctx, *scope, res);
}

}  // namespace

void AddLiveRoutes(httplib::Server& http, const RouteContext& ctx) {
  http.Get(R"(/api/live/.*)", [ctx](const httplib::Request& req, httplib::Response& res) {
    Live(ctx, req, res);
  });
}

}  // namespace ablate
