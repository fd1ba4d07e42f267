// The coordinator's HTTP side (DESIGN §8): the dashboard's static assets (web/), its JSON API and
// server-sent events for live updates, on one address (127.0.0.1:8080 unless told otherwise).
//
// Routes (every /api response is JSON; errors are {"error":{"code","message"}} with 400 for a
// malformed parameter, 401 without the client token, 404 for an unknown id or path):
//   GET  /api/sweeps?state=&tag=&limit=&offset=     v1.ListSweepsResponse
//   GET  /api/sweeps/{id}                           v1.Sweep (as GetSweep)
//   GET  /api/sweeps/{id}/runs?state=&limit=&offset= v1.ListRunsResponse
//   GET  /api/sweeps/{id}/metrics?max_points=&series=  {"sweep_id","max_points","runs":[curve]}
//   GET  /api/sweeps/{id}/events?after=&limit=      {"events":[v1.Event]}
//   GET  /api/sweeps/{id}/compare                   v1.CompareSweepResponse
//   GET  /api/runs?sweep_id=&state=&limit=&offset=  v1.ListRunsResponse
//   GET  /api/runs/{id}                             v1.Run (as GetRun: attempts, config)
//   GET  /api/runs/{id}/metrics?max_points=&series= curve (metrics_json.h), downsampled min/max
//   GET  /api/runs/{id}/events?after=&limit=        {"events":[v1.Event]}
//   GET  /api/workers                               v1.ListWorkersResponse
//   GET  /api/presets                               v1.ListPresetsResponse
//   GET  /api/records                               v1.ListRecordsResponse
//   GET  /api/live/sweeps | /api/live/sweeps/{id} | /api/live/runs/{id} | /api/live/workers
//                                                   text/event-stream (live_stream.h)
//   GET  /api/auth                                  {"required":bool,"authorized":bool}
//   POST /api/login (form: token, next)             sets the token cookie; 303 to `next`
//   POST /api/logout                                clears it; 303 to /login
//   GET  /, /sweeps, /sweeps/{id}, /runs/{id}, /workers, /records, /login   the page (index.html)
//   GET  /vendor/uplot/*                            uPlot from web/node_modules/uplot/dist
// Protobuf messages use the proto3 JSON mapping (.proto field names, enums by name, 64-bit
// integers as strings). Responses to /api carry X-Ablate-Now-Ms, the server's clock.
#ifndef ABLATE_SERVER_HTTP_DASHBOARD_SERVER_H_
#define ABLATE_SERVER_HTTP_DASHBOARD_SERVER_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "server/core/change_feed.h"
#include "server/http/connection_gate.h"
#include "server/http/login_throttle.h"
#include "server/rpc/ablate_service.h"
#include "server/store/store.h"

namespace httplib {
class Server;
class TaskQueue;
}

namespace ablate {

class ApiQueries;
class LiveHub;
class LiveServer;

// Under HTTPS a live page holds a pool thread for as long as it is open (live_routes.cc).
inline constexpr int kMaxHttpsLiveStreams = 64;
// The pool's threads for the other requests (API queries, pages, assets). Each serves one
// request, whole (the gate hands over only requests that have arrived, one per connection), so
// a few are enough for a lab's dashboards; the coordinator's threads stay <= 64 with 500 live
// pages, 200 watchers and 500 streaming runs (bench/coordinator/NOTES.md: gRPC's own threads
// grow from 10 to about 20 under that load).
inline constexpr int kHttpRequestThreads = 10;

struct DashboardOptions {
  // HOST:PORT ([v6]:PORT for IPv6); port 0 lets the OS choose (see DashboardServer::port).
  std::string listen = "127.0.0.1:8080";
  // Folder with static/ (the pages) and node_modules/uplot/dist; "" serves the API only.
  std::string web_root;
  // The client token the API requires; "" requires none.
  std::string client_token;
  // PEM files: serve HTTPS (the gRPC --tls-cert/--tls-key). Both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Serve beyond loopback without a client token (--http-insecure). Without it, Start refuses a
  // non-loopback address when client_token is "".
  bool insecure = false;
  // Slowing down of wrong tokens per client address (login form and Bearer headers). Its clock
  // is replaced by `clock`.
  LoginThrottleOptions login_throttle;
  // Not owned; outlives the server. WallMs: X-Ablate-Now-Ms and the live streams' "ready" now_ms;
  // MonotonicMs: the login throttle.
  const Clock* clock = &SystemClock::Get();
  // The front door: connections per client address, and the deadline for a request to arrive
  // whole before it gets a thread (connection_gate.h). `opaque` is set from the TLS files.
  ConnectionGateOptions gate;
  // Live streams open at once; more are answered 503. Over plain HTTP a page holds no thread
  // (live_server.h); under HTTPS each holds one of the pool's, so there the cap is at most
  // kMaxHttpsLiveStreams.
  int max_live_streams = 1000;
  // A live stream polls at most this often, and at least every second.
  std::chrono::milliseconds live_min_interval{250};
  // Raw metric points the curve cache may hold (about 100 bytes each); 0 = no cache.
  size_t curve_cache_points = 500000;
  // A comment line goes out on an idle live stream this often (proxies drop silent streams).
  std::chrono::milliseconds live_keepalive{15000};
};

class DashboardServer {
 public:
  // Binds `options.listen` and serves on threads of its own. `store` and `feed` must outlive the
  // server; `hooks` are the gRPC client service's (see ApiQueries). INVALID_ARGUMENT for a
  // malformed address or unreadable TLS files, FAILED_PRECONDITION for a non-loopback address
  // without a client token (unless `insecure`), UNAVAILABLE when it cannot be bound (in use, no
  // such interface).
  static absl::StatusOr<std::unique_ptr<DashboardServer>> Start(DashboardOptions options,
                                                                Store* store, ChangeFeed* feed,
                                                                ServiceHooks hooks);
  ~DashboardServer();  // Stop()
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  // The bound port (the chosen one for port 0).
  int port() const { return port_; }
  // "https" with TLS files, else "http".
  const char* scheme() const { return options_.tls_cert_file.empty() ? "http" : "https"; }
  const std::string& host() const { return host_; }

  // Stops listening, ends the live streams (each gets the end of its body), and joins the
  // serving threads. Idempotent; safe from any thread but a handler's.
  void Stop();

 private:
  DashboardServer(DashboardOptions options, Store* store, ChangeFeed* feed, ServiceHooks hooks,
                  std::unique_ptr<httplib::Server> http);
  void StartServing(int listen_fd);

  const DashboardOptions options_;
  ChangeFeed* const feed_;
  std::unique_ptr<ApiQueries> queries_;
  std::unique_ptr<LiveHub> live_hub_;  // the live streams' shared polls
  std::unique_ptr<httplib::Server> http_;  // an httplib::SSLServer with TLS files
  LoginThrottle throttle_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> live_streams_{0};
  std::string host_;
  int port_ = 0;
  std::unique_ptr<httplib::TaskQueue> pool_;  // runs the requests, one thread per connection
  std::unique_ptr<LiveServer> live_server_;   // plain HTTP's live pages, without a thread each
  std::unique_ptr<ConnectionGate> gate_;      // accepts; hands whole requests to pool_
};

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_DASHBOARD_SERVER_H_
