// Internal to server/http: the route tables that DashboardServer installs on its httplib server,
// and the helpers they share. Handlers run on the server's thread pool.
#ifndef ABLATE_SERVER_HTTP_HTTP_ROUTES_H_
#define ABLATE_SERVER_HTTP_HTTP_ROUTES_H_

#include <httplib.h>

#include <atomic>
#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/core/change_feed.h"
#include "server/http/api_queries.h"
#include "server/http/dashboard_server.h"
#include "server/http/live_hub.h"

namespace ablate {

// What every handler may use; all pointers outlive the server.
struct RouteContext {
  ApiQueries* queries = nullptr;
  ChangeFeed* feed = nullptr;
  const DashboardOptions* options = nullptr;
  const std::atomic<bool>* stopping = nullptr;
  std::atomic<int>* live_streams = nullptr;
  LoginThrottle* throttle = nullptr;
  LiveHub* live_hub = nullptr;
};

// /api/* except the live streams: JSON queries, auth and login.
void AddApiRoutes(httplib::Server& http, const RouteContext& ctx);
// /api/live/*: server-sent events.
void AddLiveRoutes(httplib::Server& http, const RouteContext& ctx);
// The pages and their assets from options->web_root.
void AddPageRoutes(httplib::Server& http, const RouteContext& ctx);

// Sets a JSON body: `body` with 200, or ErrorJson with HttpStatusOf.
void ReplyJson(httplib::Response& res, const absl::StatusOr<std::string>& body);

// INVALID_ARGUMENT naming the first query parameter of `req` that is not in `allowed`.
absl::Status CheckParams(const httplib::Request& req,
                         std::initializer_list<std::string_view> allowed);

// The parameter's value, "" when absent.
std::string Param(const httplib::Request& req, const char* name);

// A request presenting a client token (Bearer header or login cookie) from an address that
// guessed wrong too often: answers 429 with Retry-After and returns true; its token is not even
// looked at. False (nothing answered) otherwise.
bool ThrottledGuess(const httplib::Request& req, httplib::Response& res, LoginThrottle& throttle);
// Counts a presented token that was wrong (`authorized` false) against the request's address.
void CountGuess(const httplib::Request& req, bool authorized, LoginThrottle& throttle);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_HTTP_ROUTES_H_
