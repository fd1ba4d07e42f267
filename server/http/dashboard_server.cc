// The HTTP server: binds, installs the auth check and the route tables, serves on its own
// thread pool, and stops cleanly with live streams open.
#include "server/http/dashboard_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/http/api_queries.h"
#include "server/http/connection_gate.h"
#include "server/http/http_auth.h"
#include "server/http/http_routes.h"
#include "server/http/json_reply.h"
#include "server/http/live_request.h"
#include "server/http/live_server.h"
#include "server/store/absl_compat.h"

namespace ablate {
namespace {

struct HostPort {
  std::string host;
  int port = 0;
};

// "127.0.0.1:8080", "localhost:0", "[::1]:8080".
absl::StatusOr<HostPort> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http '", listen, "': ", why, " (want HOST:PORT, e.g. 127.0.0.1:8080)"));
  };
  if (colon == std::string::npos || colon == 0) return bad("no host");
  HostPort hp;
  hp.host = listen.substr(0, colon);
  if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  std::string_view port = std::string_view(listen).substr(colon + 1);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), hp.port);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || hp.port < 0 ||
      hp.port > 65535) {
    return bad("the port must be a number from 0 to 65535");
  }
  return hp;
}

// httplib 0.11 has no hook between accept() and the pool thread that reads the request, and its
// per-connection processing is private. An explicit instantiation may name a private member
// ([temp.spec.general]/6); this is the one place that does, so that ConnectionGate's complete
// requests go through httplib's own processing (a virtual: SSLServer's runs the TLS handshake).
using ProcessSocket = bool (httplib::Server::*)(socket_t);
ProcessSocket ProcessAndCloseSocket();
template <ProcessSocket kMember>
struct ProcessSocketAccess {
  friend ProcessSocket ProcessAndCloseSocket() { return kMember; }
};
template struct ProcessSocketAccess<&httplib::Server::process_and_close_socket>;

// On every response. Nothing may come from elsewhere (air-gapped clusters; no CDN).
std::vector<std::pair<std::string, std::string>> SecurityHeaders() {
  return {{"Content-Security-Policy",
           "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
           "frame-ancestors 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"Referrer-Policy", "no-referrer"}};
}

// The API needs the client token, except to ask whether it does and to log in.
bool NeedsToken(const std::string& path) {
  return absl::StartsWith(path, "/api/") && path != "/api/auth" && path != "/api/login" &&
         path != "/api/logout";
}

void InstallChecks(httplib::Server& http, const DashboardOptions& options,
                   LoginThrottle* throttle) {
  const std::string token = options.client_token;
  http.set_pre_routing_handler([token, throttle, clock = options.clock](const httplib::Request& req,
                                                 httplib::Response& res) {
    if (absl::StartsWith(req.path, "/api/")) {
      res.set_header("X-Ablate-Now-Ms", std::to_string(clock->WallMs()));
      res.set_header("Cache-Control", "no-store");
    }
    if (!NeedsToken(req.path)) return httplib::Server::HandlerResponse::Unhandled;
    if (ThrottledGuess(req, res, *throttle)) return httplib::Server::HandlerResponse::Handled;
    bool ok = RequestAuthorized(req.get_header_value("Authorization"),
                                req.get_header_value("Cookie"), token);
    CountGuess(req, ok, *throttle);
    if (ok) return httplib::Server::HandlerResponse::Unhandled;
    ReplyJson(res, absl::UnauthenticatedError(ToAbsl(kTokenRequired)));
    return httplib::Server::HandlerResponse::Handled;
  });
  // Unknown paths and handler failures that set no body of their own.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.has_header("Content-Type") || res.has_header("Location")) return;  // answered
    std::string what = absl::StrCat("no such ", absl::StartsWith(req.path, "/api/") ? "API " : "",
                                    "path: ", req.method, " ", req.path);
    if (res.status == 404) ReplyJson(res, absl::NotFoundError(what));
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        ReplyJson(res, absl::InternalError(absl::StrCat("request failed: ", what)));
      });
  httplib::Headers headers;
  for (const auto& [name, value] : SecurityHeaders()) headers.emplace(name, value);
  http.set_default_headers(headers);
}

// A plain server, or an HTTPS one over the PEM files. INVALID_ARGUMENT when they cannot be used.
absl::StatusOr<std::unique_ptr<httplib::Server>> NewServer(const DashboardOptions& o) {
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return absl::InvalidArgumentError("TLS for the dashboard needs both a certificate and a key");
  }
  if (o.tls_cert_file.empty()) return std::make_unique<httplib::Server>();
  auto https =
      std::make_unique<httplib::SSLServer>(o.tls_cert_file.c_str(), o.tls_key_file.c_str());
  if (!https->is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot serve HTTPS with certificate ",
                                                   o.tls_cert_file, " and key ", o.tls_key_file,
                                                   " (unreadable, not PEM, or not a pair)"));
  }
  return https;
}

// Off loopback the API would hand every sweep to anyone who can reach the port.
absl::Status CheckExposure(const HostPort& hp, const DashboardOptions& o) {
  if (IsLoopbackHost(hp.host) || !o.client_token.empty() || o.insecure) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--http ", o.listen, " serves the dashboard beyond this machine without a client token: "
      "give --client-token-file (and --tls-cert/--tls-key for HTTPS), listen on 127.0.0.1, or "
      "pass --http-insecure to serve it to anyone who can reach the port"));
}

}  // namespace

bool ThrottledGuess(const httplib::Request& req, httplib::Response& res, LoginThrottle& throttle) {
  if (!CarriesToken(req.get_header_value("Authorization"), req.get_header_value("Cookie"))) {
    return false;
  }
  int64_t wait_ms = throttle.WaitMs(req.remote_addr);
  if (wait_ms <= 0) return false;
  res.set_header("Retry-After", std::to_string((wait_ms + 999) / 1000));
  ReplyJson(res, TooManyGuesses(req.remote_addr, wait_ms));
  res.status = 429;  // Too Many Requests: the code for "slow down", with Retry-After
  return true;
}

LoginThrottleOptions WithClock(LoginThrottleOptions o, const Clock* clock) {
  o.clock = clock;
  return o;
}

void CountGuess(const httplib::Request& req, bool authorized, LoginThrottle& throttle) {
  if (!authorized &&
      CarriesToken(req.get_header_value("Authorization"), req.get_header_value("Cookie"))) {
    throttle.Failed(req.remote_addr);
  }
}

DashboardServer::DashboardServer(DashboardOptions options, Store* store, ChangeFeed* feed,
                                 ServiceHooks hooks, std::unique_ptr<httplib::Server> http)
    : options_(std::move(options)),
      feed_(feed),
      queries_(
          std::make_unique<ApiQueries>(store, feed, std::move(hooks), options_.curve_cache_points)),
      live_hub_(std::make_unique<LiveHub>(queries_.get(), feed, options_.live_min_interval)),
      http_(std::move(http)),
      throttle_(WithClock(options_.login_throttle, options_.clock)) {}

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(DashboardOptions options,
                                                                        Store* store,
                                                                        ChangeFeed* feed,
                                                                        ServiceHooks hooks) {
  if (!options.tls_cert_file.empty()) {
    options.max_live_streams = std::min(options.max_live_streams, kMaxHttpsLiveStreams);
  }
  absl::StatusOr<HostPort> hp = ParseListen(options.listen);
  if (!hp.ok()) return hp.status();
  if (absl::Status s = CheckExposure(*hp, options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<httplib::Server>> http_server = NewServer(options);
  if (!http_server.ok()) return http_server.status();
  std::unique_ptr<DashboardServer> server(new DashboardServer(
      std::move(options), store, feed, std::move(hooks), *std::move(http_server)));
  httplib::Server& http = *server->http_;
  InstallChecks(http, server->options_, &server->throttle_);
  RouteContext ctx{server->queries_.get(),  feed,
                   &server->options_,       &server->stopping_,
                   &server->live_streams_,  &server->throttle_,
                   server->live_hub_.get()};
  AddApiRoutes(http, ctx);
  AddLiveRoutes(http, ctx);
  AddPageRoutes(http, ctx);
  // One request per connection: every request then passes the gate whole, so a client that
  // sends its second request a byte at a time cannot hold a pool thread either.
  http.set_keep_alive_max_count(1);
  int listen_fd = -1;
  http.set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;  // the last one tried is the one bound
  });
  server->host_ = hp->host;
  server->port_ = hp->port == 0 ? http.bind_to_any_port(hp->host)
                                : (http.bind_to_port(hp->host, hp->port) ? hp->port : -1);
  http.set_socket_options(httplib::default_socket_options);
  if (server->port_ <= 0 || listen_fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for HTTP on ", server->options_.listen,
        " (address in use or not on this machine); choose another with --http HOST:PORT"));
  }
  // httplib listens with a backlog of 5 (compiled into Debian's library): when many pages connect
  // at once the kernel would drop the SYNs beyond it and each such client retry only after 1, 3,
  // 7, ... s. listen() again with the system's maximum.
  ::listen(listen_fd, SOMAXCONN);
  server->StartServing(listen_fd);
  return server;
}

void DashboardServer::StartServing(int listen_fd) {
  const bool tls = !options_.tls_cert_file.empty();
  // Under HTTPS the live pages need their threads; over plain HTTP the live server holds them.
  const int threads = kHttpRequestThreads + (tls ? options_.max_live_streams : 0);
  pool_ = std::make_unique<httplib::ThreadPool>(threads);
  ConnectionGateOptions gate = options_.gate;
  gate.opaque = tls;
  ConnectionGate::Divert divert;
  if (!tls) {
    LiveServerOptions live;
    live.client_token = options_.client_token;
    live.clock = options_.clock;
    live.min_interval = options_.live_min_interval;
    live.keepalive = options_.live_keepalive;
    live.max_streams = options_.max_live_streams;
    live.headers = SecurityHeaders();
    live_server_ = std::make_unique<LiveServer>(live, live_hub_.get(), feed_, &throttle_,
                                                &live_streams_);
    divert = [live = live_server_.get()](int fd, std::string_view request,
                                         const std::string& address,
                                         std::function<void()> release) {
      if (!IsLiveRequest(request)) return false;
      live->Take(fd, address, std::move(release));
      return true;
    };
  }
  httplib::Server* http = http_.get();
  httplib::TaskQueue* pool = pool_.get();
  gate_ = std::make_unique<ConnectionGate>(
      gate, [http](int fd) { (http->*ProcessAndCloseSocket())(fd); },
      [pool](std::function<void()> work) { pool->enqueue(std::move(work)); }, std::move(divert));
  gate_->Start(listen_fd);
}

void DashboardServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (gate_) gate_->Stop();  // no new connections; the pool's live streams see stopping_
  if (live_server_) live_server_->Stop();  // before the gate goes: it frees the gate's slots
  if (pool_) pool_->shutdown();
}

DashboardServer::~DashboardServer() { Stop(); }

}  // namespace ablate
