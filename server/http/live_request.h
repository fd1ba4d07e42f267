// The request of a live page (GET /api/live/...) as the event-loop server reads it (live_server.h):
// its request line and the two headers it needs, the path and query decoded as httplib decodes
// them for the other routes, and the scope it asks for. Pure functions over the bytes the client
// sent; every field is bounded by the request's size, which the connection gate caps (8 KiB of
// head). No HTTP library types.
#ifndef ABLATE_SERVER_HTTP_LIVE_REQUEST_H_
#define ABLATE_SERVER_HTTP_LIVE_REQUEST_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/http/live_hub.h"

namespace ablate {

struct LiveRequest {
  std::string method;                                      // as sent ("GET")
  std::string path;                                        // percent-decoded, without the query
  std::vector<std::pair<std::string, std::string>> query;  // decoded ('+' is a space), in order
  // The first Authorization and Cookie headers' values (as httplib's get_header_value), "" when
  // absent.
  std::string authorization;
  std::string cookie;
};

// Whether `bytes` (the start of a request whose head is whole) asks for a live page: "GET
// /api/live/" at its very start. Anything else is served by the thread pool.
bool IsLiveRequest(std::string_view bytes);

// Parses a request head (`bytes` up to its blank line; what follows is ignored). INVALID_ARGUMENT
// naming what is malformed: no blank line, the request line, a header line, a percent escape, an
// HTTP version other than 1.0 or 1.1.
absl::StatusOr<LiveRequest> ParseLiveRequest(std::string_view bytes);

// The scope a live path asks for: /api/live/sweeps, /api/live/workers, /api/live/sweeps/{id},
// /api/live/runs/{id}, with ?series= (the only parameter). NOT_FOUND "no such API path" for
// another path; INVALID_ARGUMENT for a malformed id, an unknown parameter or series.
absl::StatusOr<LiveScope> LiveScopeOf(const LiveRequest& request);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_LIVE_REQUEST_H_
