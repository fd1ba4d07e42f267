// The JSON API: each route parses its parameters (400 naming the bad one), asks ApiQueries (the
// gRPC handlers' own code) and writes the message as JSON.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/message_limits.h"
#include "server/compare/log_import.h"
#include "server/http/http_auth.h"
#include "server/http/http_routes.h"
#include "server/http/json_reply.h"
#include "server/http/metrics_json.h"
#include "server/http/request_params.h"
#include "server/compare/compare_queries.h"
#include "server/convert/convert.h"
#include "server/store/absl_compat.h"

namespace ablate {
namespace {

using Json = absl::StatusOr<std::string>;

constexpr int64_t kMaxListLimit = 10000;
constexpr int64_t kDefaultEventLimit = 200;

// Fills limit/offset of a List*Request from the query.
template <class Req>
absl::Status ParsePage(const httplib::Request& req, int64_t default_limit, Req* out) {
  absl::StatusOr<int64_t> limit =
      ParseIntParam("limit", Param(req, "limit"), 1, kMaxListLimit, default_limit);
  if (!limit.ok()) return limit.status();
  absl::StatusOr<int64_t> offset = ParseIntParam("offset", Param(req, "offset"), 0, INT32_MAX, 0);
  if (!offset.ok()) return offset.status();
  out->set_limit(static_cast<int32_t>(*limit));
  out->set_offset(static_cast<int32_t>(*offset));
  return absl::OkStatus();
}

Json ListSweeps(ApiQueries& q, const httplib::Request& req) {
  if (absl::Status s = CheckParams(req, {"state", "tag", "limit", "offset"}); !s.ok()) return s;
  v1::ListSweepsRequest list;
  absl::StatusOr<std::optional<SweepState>> state = ParseSweepStateParam(Param(req, "state"));
  if (!state.ok()) return state.status();
  if (*state) list.set_state(ToProto(**state));
  list.set_tag(Param(req, "tag"));
  if (absl::Status s = ParsePage(req, 100, &list); !s.ok()) return s;
  absl::StatusOr<v1::ListSweepsResponse> sweeps = q.ListSweeps(list);
  if (!sweeps.ok()) return sweeps.status();
  return ProtoJson(*sweeps);
}

// Runs of one sweep (sweep_id > 0) or of every sweep (sweep_id == 0, which the query may set).
Json ListRuns(ApiQueries& q, const httplib::Request& req, int64_t sweep_id) {
  std::initializer_list<std::string_view> allowed = {"state", "limit", "offset", "sweep_id"};
  if (absl::Status s = CheckParams(req, allowed); !s.ok()) return s;
  v1::ListRunsRequest list;
  if (sweep_id == 0 && !Param(req, "sweep_id").empty()) {
    absl::StatusOr<int64_t> id = ParseId("sweep_id", Param(req, "sweep_id"));
    if (!id.ok()) return id.status();
    sweep_id = *id;
  }
  list.set_sweep_id(sweep_id);
  absl::StatusOr<std::optional<RunState>> state = ParseRunStateParam(Param(req, "state"));
  if (!state.ok()) return state.status();
  if (*state) list.set_state(ToProto(**state));
  if (absl::Status s = ParsePage(req, kMaxListLimit, &list); !s.ok()) return s;
  absl::StatusOr<v1::ListRunsResponse> runs = q.ListRuns(list);
  if (!runs.ok()) return runs.status();
  return ProtoJson(*runs);
}

struct CurveQuery {
  int max_points = 0;
  SeriesSet series;
};

absl::StatusOr<CurveQuery> ParseCurveQuery(const httplib::Request& req) {
  if (absl::Status s = CheckParams(req, {"max_points", "series"}); !s.ok()) return s;
  absl::StatusOr<int> max_points = ParseMaxPoints(Param(req, "max_points"));
  if (!max_points.ok()) return max_points.status();
  absl::StatusOr<SeriesSet> series = SeriesSet::Parse(Param(req, "series"));
  if (!series.ok()) return series.status();
  return CurveQuery{*max_points, *series};
}

Json RunMetrics(ApiQueries& q, const httplib::Request& req, int64_t run_id) {
  absl::StatusOr<CurveQuery> query = ParseCurveQuery(req);
  if (!query.ok()) return query.status();
  return q.RunCurveJson(run_id, query->max_points, query->series);
}

Json SweepMetrics(ApiQueries& q, const httplib::Request& req, int64_t sweep_id) {
  absl::StatusOr<CurveQuery> query = ParseCurveQuery(req);
  if (!query.ok()) return query.status();
  return q.SweepCurvesJson(sweep_id, query->max_points, query->series);
}

Json Events(ApiQueries& q, const httplib::Request& req, int64_t sweep_id, int64_t run_id) {
  if (absl::Status s = CheckParams(req, {"after", "limit"}); !s.ok()) return s;
  absl::StatusOr<int64_t> after = ParseIntParam("after", Param(req, "after"), 0, INT64_MAX, 0);
  if (!after.ok()) return after.status();
  absl::StatusOr<int64_t> limit =
      ParseIntParam("limit", Param(req, "limit"), 1, kMaxListLimit, kDefaultEventLimit);
  if (!limit.ok()) return limit.status();
  absl::StatusOr<std::vector<Event>> events =
      q.ListEvents(sweep_id, run_id, *after, static_cast<int>(*limit));
  if (!events.ok()) return events.status();
  std::string out = "{\"events\":[";
  for (size_t i = 0; i < events->size(); ++i) {
    v1::Event proto;
    ToProto((*events)[i], &proto);
    absl::StrAppend(&out, i > 0 ? "," : "", ProtoJson(proto));
  }
  out.append("]}");
  return out;
}

// compare?with=3,7: imported sweeps' ids, at most 8.
absl::StatusOr<std::vector<int64_t>> ParseWith(std::string_view text) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  while (true) {
    if (out.size() == 8) return absl::InvalidArgumentError("with: at most 8 sweep ids");
    const size_t comma = text.find(',');
    absl::StatusOr<int64_t> id = ParseId("with", text.substr(0, comma));
    if (!id.ok()) return id.status();
    out.push_back(*id);
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

// The most an upload's body may hold: the logs JSON-escaped, as gRPC's ImportLogs bound allows.
constexpr size_t kMaxImportBody = kMaxUploadBytes + (kMaxUploadBytes >> 1);

// {"files":[{"name","variant","content"}],"name","hardware","target_val_loss","skip_bad",
// "dry_run"}: every field checked for its type, naming the one that is wrong.
absl::StatusOr<v1::ImportLogsRequest> ParseImportBody(const httplib::Request& req) {
  if (!absl::StartsWith(req.get_header_value("Content-Type"), "application/json")) {
    return absl::InvalidArgumentError("POST /api/import takes a JSON body (Content-Type: "
                                      "application/json)");
  }
  const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  if (!body.is_object()) return absl::InvalidArgumentError("the body is not a JSON object");
  v1::ImportLogsRequest out;
  for (const auto& [key, value] : body.items()) {
    if (key == "name" || key == "hardware") {
      if (!value.is_string()) return absl::InvalidArgumentError(key + " must be a string");
      (key == "name" ? out.mutable_name() : out.mutable_hardware())->assign(value.get<std::string>());
    } else if (key == "target_val_loss") {
      if (!value.is_number()) return absl::InvalidArgumentError(key + " must be a number");
      out.set_target_val_loss(value.get<double>());
    } else if (key == "skip_bad" || key == "dry_run") {
      if (!value.is_boolean()) return absl::InvalidArgumentError(key + " must be true or false");
      key == "skip_bad" ? out.set_skip_bad(value.get<bool>()) : out.set_dry_run(value.get<bool>());
    } else if (key == "files") {
      if (!value.is_array()) return absl::InvalidArgumentError("files must be an array");
      for (const nlohmann::json& f : value) {
        if (!f.is_object() || !f.contains("name") || !f.contains("content") ||
            !f["name"].is_string() || !f["content"].is_string() ||
            (f.contains("variant") && !f["variant"].is_string())) {
          return absl::InvalidArgumentError(
              "each of files must be {\"name\": string, \"variant\": string, \"content\": "
              "string}");
        }
        v1::ImportFile* file = out.add_files();
        file->set_name(f["name"].get<std::string>());
        file->set_content(f["content"].get<std::string>());
        file->set_variant(f.value("variant", std::string("record")));
      }
    } else {
      return absl::InvalidArgumentError("unknown field '" + key.substr(0, 40) + "' in the body");
    }
  }
  return out;
}

template <class Message>
Json AsJson(const absl::StatusOr<Message>& m) {
  if (!m.ok()) return m.status();
  return ProtoJson(*m);
}

// Registers GET `pattern` whose first capture is an id named `what` ("sweep id").
template <class F>
void GetById(httplib::Server& http, const std::string& pattern, const char* what, F body) {
  http.Get(pattern, [what, body](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<int64_t> id = ParseId(what, req.matches[1].str());
    ReplyJson(res, id.ok() ? body(req, *id) : Json(id.status()));
  });
}

// Registers GET `pattern` without ids.
template <class F>
void GetPlain(httplib::Server& http, const std::string& pattern, F body) {
  http.Get(pattern, [body](const httplib::Request& req, httplib::Response& res) {
    ReplyJson(res, body(req));
  });
}

// Percent-encodes everything but unreserved characters (RFC 3986).
std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.append({'%', kHex[c >> 4], kHex[c & 15]});
    }
  }
  return out;
}

void AddAuthRoutes(httplib::Server& http, const RouteContext& ctx) {
  const std::string token = ctx.options->client_token;
  const CookieTransport transport =
      ctx.options->tls_cert_file.empty() ? CookieTransport::kHttp : CookieTransport::kHttps;
  LoginThrottle* throttle = ctx.throttle;
  // A token here is a guess like any other: counted, and not even looked at while throttled.
  http.Get("/api/auth", [token, throttle](const httplib::Request& req, httplib::Response& res) {
    if (ThrottledGuess(req, res, *throttle)) return;
    bool ok = RequestAuthorized(req.get_header_value("Authorization"),
                                req.get_header_value("Cookie"), token);
    CountGuess(req, ok, *throttle);
    ReplyJson(res, absl::StrCat("{\"required\":", token.empty() ? "false" : "true",
                                ",\"authorized\":", ok ? "true" : "false", "}"));
  });
  http.Post("/api/login", [token, transport, throttle](const httplib::Request& req,
                                                       httplib::Response& res) {
    std::string next = SafeRedirectPath(Param(req, "next"));
    // An address that guessed wrong too often waits; its token is not even looked at.
    if (int64_t wait_ms = throttle->WaitMs(req.remote_addr); wait_ms > 0) {
      std::string wait_s = std::to_string((wait_ms + 999) / 1000);
      res.set_header("Retry-After", wait_s);
      res.set_redirect("/login?error=slow&wait=" + wait_s + "&next=" + UrlEncode(next), 303);
      return;
    }
    std::string given = Param(req, "token");
    if (token.empty() || ConstantTimeEquals(given, token)) {
      throttle->Succeeded(req.remote_addr);
      if (!token.empty()) res.set_header("Set-Cookie", LoginCookie(token, transport));
      res.set_redirect(next, 303);
      return;
    }
    throttle->Failed(req.remote_addr);
    res.set_redirect("/login?error=1&next=" + UrlEncode(next), 303);
  });
  http.Post("/api/logout", [transport](const httplib::Request&, httplib::Response& res) {
    res.set_header("Set-Cookie", LogoutCookie(transport));
    res.set_redirect("/login", 303);
  });
}

}  // namespace

void AddApiRoutes(httplib::Server& http, const RouteContext& ctx) {
  ApiQueries& q = *ctx.queries;
  AddAuthRoutes(http, ctx);
  GetPlain(http, "/api/sweeps", [&q](const httplib::Request& req) { return ListSweeps(q, req); });
  GetById(http, R"(/api/sweeps/([^/]+))", "sweep id",
          [&q](const httplib::Request& req, int64_t id) {
            if (absl::Status s = CheckParams(req, {}); !s.ok()) return Json(s);
            return AsJson(q.GetSweep(id));
          });
  GetById(http, R"(/api/sweeps/([^/]+)/runs)", "sweep id",
          [&q](const httplib::Request& req, int64_t id) { return ListRuns(q, req, id); });
  GetById(http, R"(/api/sweeps/([^/]+)/metrics)", "sweep id",
          [&q](const httplib::Request& req, int64_t id) { return SweepMetrics(q, req, id); });
  GetById(http, R"(/api/sweeps/([^/]+)/events)", "sweep id",
          [&q](const httplib::Request& req, int64_t id) { return Events(q, req, id, 0); });
  GetById(http, R"(/api/sweeps/([^/]+)/compare)", "sweep id",
          [&q](const httplib::Request& req, int64_t id) {
            if (absl::Status s = CheckParams(req, {"with"}); !s.ok()) return Json(s);
            absl::StatusOr<std::vector<int64_t>> with = ParseWith(Param(req, "with"));
            if (!with.ok()) return Json(with.status());
            return AsJson(BuildSweepComparison(*q.store(), id, *with));
          });
  // The dashboard's upload of record logs (ablate import's ImportLogs, same code): a JSON body
  // only, so that a page of another origin cannot post one without a CORS preflight, which this
  // server never answers.
  http.set_payload_max_length(kMaxImportBody);
  http.Post("/api/import", [&q](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<v1::ImportLogsRequest> parsed = ParseImportBody(req);
    if (!parsed.ok()) return ReplyJson(res, Json(parsed.status()));
    v1::ImportLogsResponse resp;
    absl::Status s = ImportRecordLogs(*q.store(), *parsed, &resp);
    ReplyJson(res, s.ok() ? Json(ProtoJson(resp)) : Json(s));
  });
  GetPlain(http, "/api/runs", [&q](const httplib::Request& req) { return ListRuns(q, req, 0); });
  GetById(http, R"(/api/runs/([^/]+))", "run id", [&q](const httplib::Request& req, int64_t id) {
    if (absl::Status s = CheckParams(req, {}); !s.ok()) return Json(s);
    return AsJson(q.GetRun(id));
  });
  GetById(http, R"(/api/runs/([^/]+)/metrics)", "run id",
          [&q](const httplib::Request& req, int64_t id) { return RunMetrics(q, req, id); });
  GetById(http, R"(/api/runs/([^/]+)/events)", "run id",
          [&q](const httplib::Request& req, int64_t id) { return Events(q, req, 0, id); });
  GetPlain(http, "/api/workers", [&q](const httplib::Request& req) {
    if (absl::Status s = CheckParams(req, {}); !s.ok()) return Json(s);
    return AsJson(q.ListWorkers());
  });
  GetPlain(http, "/api/pools", [&q](const httplib::Request& req) {
    if (absl::Status s = CheckParams(req, {}); !s.ok()) return Json(s);
    return AsJson(q.ListPools());
  });
  GetPlain(http, "/api/presets", [&q](const httplib::Request& req) {
    if (absl::Status s = CheckParams(req, {}); !s.ok()) return Json(s);
    return AsJson(q.ListPresets());
  });
  GetPlain(http, "/api/records", [&q](const httplib::Request& req) {
    if (absl::Status s = CheckParams(req, {}); !s.ok()) return Json(s);
    return AsJson(BuildRecordsTable(*q.store()));
  });
}

// The body goes out through a content provider of known length, which httplib sends as it is:
// with set_content it would compress for browsers that accept br or gzip, and compressing a
// sweep overlay (megabytes of numbers) costs many times what sending it does (NOTES.md).
void ReplyJson(httplib::Response& res, const absl::StatusOr<std::string>& body) {
  res.status = body.ok() ? 200 : HttpStatusOf(body.status().code());
  auto text = std::make_shared<std::string>(body.ok() ? *body : ErrorJson(body.status()));
  res.set_content_provider(text->size(), "application/json",
                           [text](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(text->data() + offset, length);
                           });
}

absl::Status CheckParams(const httplib::Request& req,
                         std::initializer_list<std::string_view> allowed) {
  for (const auto& [name, value] : req.params) {
    if (absl::Status s = CheckParamName(name, allowed); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string Param(const httplib::Request& req, const char* name) {
  return req.has_param(name) ? req.get_param_value(name) : "";
}

}  // namespace ablate
