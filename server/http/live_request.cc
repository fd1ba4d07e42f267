// Reading a live page's request without an HTTP library; see live_request.h.
#include "server/http/live_request.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "server/http/metrics_json.h"
#include "server/http/request_params.h"
#include "server/store/absl_compat.h"

namespace ablate {
namespace {

constexpr std::string_view kLivePrefix = "/api/live/";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes (and '+' as a space in a query); INVALID_ARGUMENT for a broken escape.
absl::StatusOr<std::string> Decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else if (i + 2 < text.size() && HexValue(text[i + 1]) >= 0 && HexValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      i += 2;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed percent escape in '", ToAbsl(text), "'"));
    }
  }
  return out;
}

bool EqualsNoCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "METHOD TARGET HTTP/1.x" into the request's method, path and query.
absl::Status ParseRequestLine(std::string_view line, LiveRequest* r) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed request line '", ToAbsl(line.substr(0, 200)), "' (want METHOD PATH HTTP/1.1)"));
  };
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad();
  }
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (sp1 == 0 || target.empty() || target.front() != '/') return bad();
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported HTTP version '", ToAbsl(version.substr(0, 20)), "'"));
  }
  r->method = std::string(line.substr(0, sp1));
  size_t q = target.find('?');
  absl::StatusOr<std::string> path = Decode(target.substr(0, q), false);
  if (!path.ok()) return path.status();
  r->path = *std::move(path);
  std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    absl::StatusOr<std::string> key = Decode(pair.substr(0, eq), true);
    absl::StatusOr<std::string> value =
        Decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!key.ok()) return key.status();
    if (!value.ok()) return value.status();
    r->query.emplace_back(*std::move(key), *std::move(value));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsLiveRequest(std::string_view bytes) {
  return bytes.substr(0, 4) == "GET " && bytes.substr(4, kLivePrefix.size()) == kLivePrefix;
}

absl::StatusOr<LiveRequest> ParseLiveRequest(std::string_view bytes) {
  size_t crlf = bytes.find("\r\n\r\n");
  size_t lf = bytes.find("\n\n");
  size_t end = std::min(crlf, lf);
  if (end == std::string_view::npos) {
    return absl::InvalidArgumentError("the request's head has no end (no blank line)");
  }
  std::string_view head = bytes.substr(0, end);
  LiveRequest r;
  size_t eol = head.find('\n');
  if (absl::Status s = ParseRequestLine(Trim(head.substr(0, eol)), &r); !s.ok()) return s;
  bool have_auth = false, have_cookie = false;
  while (eol != std::string_view::npos) {
    head = head.substr(eol + 1);
    eol = head.find('\n');
    std::string_view line = Trim(head.substr(0, eol));
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed header line '", ToAbsl(line.substr(0, 200)), "'"));
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (!have_auth && EqualsNoCase(name, "authorization")) {
      r.authorization = std::string(value);
      have_auth = true;
    } else if (!have_cookie && EqualsNoCase(name, "cookie")) {
      r.cookie = std::string(value);
      have_cookie = true;
    }
  }
  return r;
}

absl::StatusOr<LiveScope> LiveScopeOf(const LiveRequest& request) {
  std::string_view path = request.path;
  LiveScope scope;
  if (path == "/api/live/sweeps") {
    scope.kind = LiveScope::Kind::kSweeps;
  } else if (path == "/api/live/workers") {
    scope.kind = LiveScope::Kind::kWorkers;
  } else {
    bool matched = false;
    for (auto [prefix, kind, what] :
         {std::tuple{std::string_view("/api/live/sweeps/"), LiveScope::Kind::kSweep, "sweep id"},
          std::tuple{std::string_view("/api/live/runs/"), LiveScope::Kind::kRun, "run id"}}) {
      std::string_view rest =
          path.substr(0, prefix.size()) == prefix ? path.substr(prefix.size()) : std::string_view();
      if (rest.empty() || rest.find('/') != std::string_view::npos) continue;
      absl::StatusOr<int64_t> id = ParseId(what, rest);
      if (!id.ok()) return id.status();
      scope.kind = kind;
      scope.id = *id;
      matched = true;
    }
    if (!matched) {
      return absl::NotFoundError(
          absl::StrCat("no such API path: ", request.method, " ", request.path));
    }
  }
  std::string series_text;
  bool have_series = false;
  for (const auto& [name, value] : request.query) {
    if (absl::Status s = CheckParamName(name, {"series"}); !s.ok()) return s;
    if (!have_series) series_text = value;  // the first, as httplib's get_param_value
    have_series = true;
  }
  absl::StatusOr<SeriesSet> series = SeriesSet::Parse(series_text);
  if (!series.ok()) return series.status();
  scope.series = *series;
  return scope;
}

}  // namespace ablate
