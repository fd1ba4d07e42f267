// Unit tests of the dashboard adapter's pure parts: columnar curve JSON and its downsampling,
// parameter parsing, token checks, the curve cache and the live-update diffing over an in-memory
// store.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "server/http/curve_cache.h"
#include "server/http/http_auth.h"
#include "server/http/live_request.h"
#include "server/http/live_stream.h"
#include "server/http/login_throttle.h"
#include "server/http/metrics_json.h"
#include "server/http/request_params.h"
#include "server/store/downsample.h"
#include "tests/http/sweep_fixture.h"

namespace ablate {
namespace {

using nlohmann::json;

std::vector<MetricPoint> Points(int n, int64_t spike = -1) {
  testing::FixtureShape shape;
  shape.spike_step = spike;
  return testing::FixturePoints(0, 0, n, shape);
}

json Columns(std::span<const MetricPoint> points, const SeriesSet& series) {
  std::string out;
  AppendPointColumns(points, series, &out);
  return json::parse(out);
}

TEST(MetricsJsonTest, ColumnsHoldEveryPointAndNullForMissingValues) {
  std::vector<MetricPoint> points = Points(30);
  json j = Columns(points, SeriesSet::All());
  ASSERT_EQ(j["step"].size(), 30u);
  EXPECT_EQ(j["step"][7], 7);
  EXPECT_DOUBLE_EQ(j["train_loss"][7].get<double>(), *points[7].train_loss);
  EXPECT_TRUE(j["val_loss"][7].is_null());
  EXPECT_DOUBLE_EQ(j["val_loss"][25].get<double>(), *points[25].val_loss);
  EXPECT_EQ(j["tokens"][3], 3 * 8192);
}

TEST(MetricsJsonTest, OnlyTheSelectedSeriesAndThePointsCarryingThem) {
  std::vector<MetricPoint> points = Points(100);
  json j = Columns(points, *SeriesSet::Parse("val_loss"));
  EXPECT_FALSE(j.contains("train_loss"));
  EXPECT_EQ(j["step"], json({0, 25, 50, 75}));
}

TEST(MetricsJsonTest, NonFiniteValuesAreNull) {
  std::vector<MetricPoint> points = Points(2);
  points[1].train_loss = std::numeric_limits<double>::quiet_NaN();
  json j = Columns(points, SeriesSet::All());
  EXPECT_TRUE(j["train_loss"][1].is_null());
}

TEST(MetricsJsonTest, DownsampledColumnsAgreeWithDownsampleMinMax) {
  std::vector<MetricPoint> points = Points(3000, /*spike=*/1234);
  SeriesSet series = *SeriesSet::Parse("train_loss,val_loss");
  std::string fast;
  AppendDownsampledColumns(points, 200, series, &fast);
  std::vector<MetricPoint> reference = DownsampleMinMax(points, 200).value();
  json expected = Columns(reference, series);
  EXPECT_EQ(json::parse(fast), expected);
  int train = 0;
  bool spike = false;
  for (const json& v : expected["train_loss"]) {
    train += v.is_null() ? 0 : 1;
    spike = spike || (!v.is_null() && v.get<double>() == 50.0);
  }
  EXPECT_LE(train, 200);
  EXPECT_GT(train, 150);
  EXPECT_TRUE(spike) << "the spike survives downsampling";
}

TEST(MetricsJsonTest, SeriesListErrorsNameTheUnknownSeries) {
  absl::StatusOr<SeriesSet> bad = SeriesSet::Parse("train_loss,bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'bogus'"), std::string::npos);
}

TEST(RequestParamsTest, IdsAndRangesAreCheckedWithTheOffendingText) {
  EXPECT_EQ(ParseId("sweep id", "42").value(), 42);
  for (const char* bad : {"0", "-3", "abc", "4x", ""}) {
    absl::StatusOr<int64_t> id = ParseId("sweep id", bad);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_NE(id.status().message().find(std::string("'") + bad + "'"), std::string::npos);
  }
  EXPECT_EQ(ParseIntParam("limit", "", 1, 10, 7).value(), 7);
  EXPECT_FALSE(ParseIntParam("limit", "11", 1, 10, 7).ok());
  EXPECT_EQ(ParseMaxPoints("").value(), kDefaultMaxPoints);
  EXPECT_EQ(ParseMaxPoints("0").value(), kDefaultMaxPoints);
  EXPECT_EQ(ParseMaxPoints("2").value(), 2);
  EXPECT_FALSE(ParseMaxPoints("1").ok());
  EXPECT_FALSE(ParseMaxPoints("999999").ok());
  EXPECT_EQ(ParseRunStateParam("running").value(), RunState::kRunning);
  EXPECT_FALSE(ParseRunStateParam("runing").ok());
  EXPECT_FALSE(ParseSweepStateParam("assigned").ok()) << "a run state, not a sweep state";
}

TEST(HttpAuthTest, BearerHeaderOrCookie) {
  EXPECT_TRUE(RequestAuthorized("", "", ""));
  EXPECT_TRUE(RequestAuthorized("Bearer s3cret", "", "s3cret"));
  EXPECT_TRUE(RequestAuthorized("bearer  s3cret ", "", "s3cret"));
  EXPECT_FALSE(RequestAuthorized("Bearer s3cre", "", "s3cret"));
  EXPECT_FALSE(RequestAuthorized("Basic s3cret", "", "s3cret"));
  EXPECT_FALSE(RequestAuthorized("", "", "s3cret"));
  std::string cookie = LoginCookie("s3cret; x");
  std::string value = cookie.substr(0, cookie.find(';'));
  EXPECT_EQ(value.find(' '), std::string::npos) << "the cookie value is encoded";
  EXPECT_TRUE(RequestAuthorized("", "a=1; " + value + "; b=2", "s3cret; x"));
  EXPECT_FALSE(RequestAuthorized("", "a=1; " + value, "s3cret"));
  EXPECT_NE(LogoutCookie().find("Max-Age=0"), std::string::npos);
}

TEST(HttpAuthTest, OnlySameSitePathsFollowALogin) {
  EXPECT_EQ(SafeRedirectPath("/sweeps/3?tab=runs"), "/sweeps/3?tab=runs");
  EXPECT_EQ(SafeRedirectPath("/"), "/");
  for (std::string_view bad : {"", "sweeps", "//evil", "/\\evil", "/\\\\evil", "/a\\b",
                               "https://evil", "/a\tb", "/a\r\nSet-Cookie: x", "/a b",
                               "/\x7f", "/caf\xc3\xa9"}) {
    EXPECT_EQ(SafeRedirectPath(bad), "/") << bad;
  }
  EXPECT_TRUE(CarriesToken("Bearer x", ""));
  EXPECT_TRUE(CarriesToken("", "a=1; ablate_token=00"));
  EXPECT_FALSE(CarriesToken("Basic x", "a=1"));
}

class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = Store::Open(":memory:").value();
    testing::FixtureShape shape;
    shape.running = 1;
    sweep_ = testing::MakeFixtureSweep(*store_, "unit", shape).value();
  }
  const ablate::Run& running() const { return sweep_.runs.back(); }
  ablate::Run Fresh(int64_t id) const { return store_->GetRun(id).value(); }

  std::unique_ptr<Store> store_;
  testing::FixtureSweep sweep_;
  ChangeFeed feed_;
};

TEST_F(StoreFixture, CurveCacheMatchesTheStoreAndSeesNewPoints) {
  CurveCache cache(store_.get(), 100000);
  SeriesSet all = SeriesSet::All();
  const ablate::Run run = Fresh(running().id);
  auto parse = [](const std::string& s) { return json::parse(s); };
  json cached = parse(cache.CurveJson(run, 50, all).value());
  std::string direct;
  AppendCurveJson(store_->GetMetrics(run.id, 50).value(), all, &direct);
  EXPECT_EQ(cached, parse(direct));
  EXPECT_EQ(cached["total_points"], 150);
  ASSERT_TRUE(testing::AppendFixtureBatch(*store_, run, sweep_.attempts.back(), 3, 150, 10, 99,
                                          testing::FixtureShape())
                  .ok());
  json grown = parse(cache.CurveJson(Fresh(run.id), 50, all).value());
  EXPECT_EQ(grown["total_points"], 160);
  std::string direct2;
  AppendCurveJson(store_->GetMetrics(run.id, 50).value(), all, &direct2);
  EXPECT_EQ(grown, parse(direct2));
}

TEST_F(StoreFixture, CurveCacheWithoutRoomStillAnswers) {
  CurveCache cache(store_.get(), 10);  // less than one curve
  for (const ablate::Run& r : sweep_.runs) {
    json j = json::parse(cache.CurveJson(Fresh(r.id), 100, SeriesSet::All()).value());
    EXPECT_EQ(j["run_id"], r.id);
    EXPECT_GT(j["columns"]["step"].size(), 0u);
  }
}

std::vector<std::string> Events(const std::vector<SseMessage>& messages, const std::string& kind) {
  std::vector<std::string> out;
  for (const SseMessage& m : messages) {
    if (m.event == kind) out.push_back(m.data);
  }
  return out;
}

TEST_F(StoreFixture, LiveSweepStreamSendsStateThenOnlyChanges) {
  ApiQueries queries(store_.get(), &feed_, {}, 1000);
  LiveHub hub(&queries, nullptr, std::chrono::milliseconds(0));  // polls at every ask
  LiveStream stream(&hub, {LiveScope::Kind::kSweep, sweep_.sweep_id, SeriesSet::All()});
  std::vector<SseMessage> first = stream.Poll().value();
  EXPECT_EQ(Events(first, "sweep").size(), 1u);
  EXPECT_EQ(Events(first, "run").size(), sweep_.runs.size());
  EXPECT_TRUE(Events(first, "points").empty()) << "stored points come from the metrics API";
  EXPECT_FALSE(Events(first, "event").empty());
  ASSERT_EQ(first.back().event, "ready");
  EXPECT_TRUE(stream.Poll().value().empty()) << "nothing changed";

  const ablate::Run run = running();
  ASSERT_TRUE(testing::AppendFixtureBatch(*store_, run, sweep_.attempts.back(), 3, 150, 5, 77,
                                          testing::FixtureShape())
                  .ok());
  std::vector<std::string> points = Events(stream.Poll().value(), "points");
  ASSERT_EQ(points.size(), 1u);
  json p = json::parse(points[0]);
  EXPECT_EQ(p["run_id"], run.id);
  EXPECT_EQ(p["reset"], false);
  EXPECT_EQ(p["columns"]["step"], json({150, 151, 152, 153, 154}));
}

TEST_F(StoreFixture, LiveRunStreamAndUnknownIds) {
  ApiQueries queries(store_.get(), &feed_, {}, 1000);
  LiveHub hub(&queries, nullptr, std::chrono::milliseconds(0));
  LiveStream run(&hub, {LiveScope::Kind::kRun, running().id, SeriesSet::All()});
  std::vector<SseMessage> first = run.Poll().value();
  ASSERT_EQ(Events(first, "run").size(), 1u);
  EXPECT_TRUE(json::parse(Events(first, "run")[0]).contains("attempts"));
  LiveStream missing(&hub, {LiveScope::Kind::kSweep, 999, SeriesSet::All()});
  EXPECT_EQ(missing.Poll().status().code(), absl::StatusCode::kNotFound);
  LiveStream missing_run(&hub, {LiveScope::Kind::kRun, 999, SeriesSet::All()});
  EXPECT_EQ(missing_run.Poll().status().code(), absl::StatusCode::kNotFound);
  LiveStream workers(&hub, {LiveScope::Kind::kWorkers, 0, SeriesSet::All()});
  std::vector<std::string> w = Events(workers.Poll().value(), "workers");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(json::parse(w[0])["workers"][0]["id"], "fixture-worker");
}

// Many pages on one sweep and its runs: one store poll per interval serves them all, each page
// gets its own part (a run page only its run's points, in the series it asked for).
TEST_F(StoreFixture, PagesOnOneSweepShareOnePollPerInterval) {
  ApiQueries queries(store_.get(), &feed_, {}, 1000);
  const auto interval = std::chrono::milliseconds(1500);
  LiveHub hub(&queries, nullptr, interval);
  const ablate::Run run = running();
  SeriesSet val_only = SeriesSet::Parse("val_loss").value();
  std::vector<std::unique_ptr<LiveStream>> sweep_pages, run_pages, other_run_pages;
  for (int i = 0; i < 10; ++i) {
    sweep_pages.push_back(std::make_unique<LiveStream>(
        &hub, LiveScope{LiveScope::Kind::kSweep, sweep_.sweep_id, SeriesSet::All()}));
    run_pages.push_back(std::make_unique<LiveStream>(
        &hub, LiveScope{LiveScope::Kind::kRun, run.id, i % 2 == 0 ? SeriesSet::All() : val_only}));
    other_run_pages.push_back(std::make_unique<LiveStream>(
        &hub, LiveScope{LiveScope::Kind::kRun, sweep_.runs.front().id, SeriesSet::All()}));
  }
  for (auto* pages : {&sweep_pages, &run_pages, &other_run_pages}) {
    for (auto& page : *pages) ASSERT_EQ(page->Poll().value().back().event, "ready");
  }
  EXPECT_EQ(hub.polls(), 1u) << "the first page's poll serves the snapshots of the others";

  testing::FixtureShape shape;
  shape.val_every = 2;
  ASSERT_TRUE(testing::AppendFixtureBatch(*store_, run, sweep_.attempts.back(), 3, 150, 4, 77,
                                          shape)
                  .ok());
  std::this_thread::sleep_for(interval + std::chrono::milliseconds(100));
  const uint64_t before = hub.polls();
  std::vector<std::vector<SseMessage>> sweep_got, run_got, other_got;
  for (auto& page : sweep_pages) sweep_got.push_back(page->Poll().value());
  for (auto& page : run_pages) run_got.push_back(page->Poll().value());
  for (auto& page : other_run_pages) other_got.push_back(page->Poll().value());
  EXPECT_EQ(hub.polls(), before + 1) << "30 pages, one poll";

  for (const auto& got : sweep_got) {
    std::vector<std::string> points = Events(got, "points");
    ASSERT_EQ(points.size(), 1u);
    EXPECT_EQ(points[0], Events(sweep_got[0], "points")[0]);
    json p = json::parse(points[0]);
    EXPECT_EQ(p["run_id"], run.id);
    EXPECT_EQ(p["columns"]["step"], json({150, 151, 152, 153}));
    EXPECT_TRUE(p["columns"].contains("train_loss"));
  }
  for (size_t i = 0; i < run_got.size(); ++i) {
    std::vector<std::string> points = Events(run_got[i], "points");
    ASSERT_EQ(points.size(), 1u) << "page " << i;
    json p = json::parse(points[0]);
    EXPECT_EQ(p["run_id"], run.id);
    if (i % 2 == 0) {
      EXPECT_EQ(p["columns"]["step"], json({150, 151, 152, 153}));
    } else {  // only the points that carry a val_loss, and no train_loss column
      EXPECT_EQ(p["columns"]["step"], json({150, 152}));
      EXPECT_FALSE(p["columns"].contains("train_loss"));
    }
  }
  for (const auto& got : other_got) EXPECT_TRUE(Events(got, "points").empty());
}

// A page that stops reading does not hold the scope's changes forever: after max_lag they are
// dropped, and that page is told it fell behind (its stream ends; the browser reconnects).
TEST_F(StoreFixture, APageThatStopsReadingIsDroppedNotBuffered) {
  ApiQueries queries(store_.get(), &feed_, {}, 1000);
  LiveHub hub(&queries, nullptr, std::chrono::milliseconds(0), std::chrono::milliseconds(200));
  const ablate::Run run = running();
  LiveStream stuck(&hub, {LiveScope::Kind::kSweep, sweep_.sweep_id, SeriesSet::All()});
  LiveStream reading(&hub, {LiveScope::Kind::kSweep, sweep_.sweep_id, SeriesSet::All()});
  ASSERT_TRUE(stuck.Poll().ok());
  ASSERT_TRUE(reading.Poll().ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(testing::AppendFixtureBatch(*store_, run, sweep_.attempts.back(), 3,
                                            150 + 10 * i, 5, 1000 + i, testing::FixtureShape())
                    .ok());
    EXPECT_EQ(Events(reading.Poll().value(), "points").size(), 1u);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  absl::StatusOr<std::vector<SseMessage>> late = stuck.Poll();
  EXPECT_EQ(late.status().code(), absl::StatusCode::kResourceExhausted) << late.status();
  EXPECT_NE(late.status().message().find("fell more than 200 ms behind"), std::string::npos);
  EXPECT_TRUE(reading.Poll().ok()) << "the page that reads goes on";
}

// The live server reads a page's request itself (live_request.h): the same paths, parameters,
// decoding and errors as the httplib routes, and the headers the token check needs.
TEST(LiveRequestTest, RequestLineHeadersAndQueryAreDecoded) {
  EXPECT_TRUE(IsLiveRequest("GET /api/live/sweeps HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(IsLiveRequest("POST /api/live/sweeps HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(IsLiveRequest("GET /api/livex HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(IsLiveRequest("GET /api/sweeps HTTP/1.1\r\n\r\n"));

  absl::StatusOr<LiveRequest> r = ParseLiveRequest(
      "GET /api/live/runs/%34%32?series=train_loss%2Cval_loss&x=a+b HTTP/1.1\r\n"
      "Host: h\r\nauthorization:  Bearer tok \r\nCOOKIE: a=1; ablate_token=74\r\n"
      "Cookie: second=2\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path, "/api/live/runs/42");
  ASSERT_EQ(r->query.size(), 2u);
  EXPECT_EQ(r->query[0], std::make_pair(std::string("series"), std::string("train_loss,val_loss")));
  EXPECT_EQ(r->query[1], std::make_pair(std::string("x"), std::string("a b")));
  EXPECT_EQ(r->authorization, "Bearer tok");
  EXPECT_EQ(r->cookie, "a=1; ablate_token=74") << "the first Cookie header, as httplib";
  EXPECT_TRUE(ParseLiveRequest("GET /api/live/sweeps HTTP/1.0\n\n").ok()) << "bare newlines";

  for (const char* bad : {"GET /api/live/sweeps HTTP/1.1\r\nHost: x\r\n",  // no blank line
                          "GET /api/live/sweeps\r\n\r\n", "GET  /api/live/sweeps HTTP/1.1\r\n\r\n",
                          "GET /api/live/sweeps HTTP/2\r\n\r\n",
                          "GET /api/live/sweeps?series=%zz HTTP/1.1\r\n\r\n",
                          "GET /api/live/sweeps HTTP/1.1\r\nno colon\r\n\r\n"}) {
    absl::StatusOr<LiveRequest> got = ParseLiveRequest(bad);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(LiveRequestTest, PathsMapToScopesAndBadOnesAreNamed) {
  auto scope = [](const std::string& target) {
    absl::StatusOr<LiveRequest> r = ParseLiveRequest("GET " + target + " HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(r.ok()) << target;
    return LiveScopeOf(*r);
  };
  EXPECT_EQ(scope("/api/live/sweeps")->kind, LiveScope::Kind::kSweeps);
  EXPECT_EQ(scope("/api/live/workers")->kind, LiveScope::Kind::kWorkers);
  absl::StatusOr<LiveScope> sweep = scope("/api/live/sweeps/7?series=val_loss");
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(sweep->kind, LiveScope::Kind::kSweep);
  EXPECT_EQ(sweep->id, 7);
  EXPECT_TRUE(sweep->series.Has(Series::kValLoss));
  EXPECT_FALSE(sweep->series.Has(Series::kTrainLoss));
  absl::StatusOr<LiveScope> run = scope("/api/live/runs/9");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->kind, LiveScope::Kind::kRun);
  EXPECT_EQ(run->id, 9);
  EXPECT_TRUE(run->series.Has(Series::kTrainLoss)) << "no series: all of them";

  auto error = [&](const std::string& target) { return scope(target).status(); };
  EXPECT_EQ(error("/api/live/nothing").code(), absl::StatusCode::kNotFound);
  EXPECT_NE(error("/api/live/nothing").message().find("no such API path: GET /api/live/nothing"),
            std::string::npos);
  EXPECT_EQ(error("/api/live/sweeps/3/").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(error("/api/live/runs/").code(), absl::StatusCode::kNotFound);
  EXPECT_NE(error("/api/live/sweeps/abc").message().find("sweep id must be a positive integer"),
            std::string::npos);
  EXPECT_NE(error("/api/live/runs/0").message().find("run id"), std::string::npos);
  EXPECT_NE(error("/api/live/sweeps?limit=3").message().find(
                "unknown query parameter 'limit'; this endpoint takes: series"),
            std::string::npos);
  EXPECT_EQ(error("/api/live/sweeps?series=bogus").code(), absl::StatusCode::kInvalidArgument);
}

TEST(SseTest, MessageFormat) {
  EXPECT_EQ(FormatSse({"run", "{\"a\":1}"}), "event: run\ndata: {\"a\":1}\n\n");
}

TEST(HttpAuthTest, ConstantTimeEqualsAndCookieFlags) {
  EXPECT_TRUE(ConstantTimeEquals("s3cret", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3cre", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret!", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("s3cret\0", 7), "s3cret"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_EQ(LoginCookie("t").find("Secure"), std::string::npos);
  std::string https = LoginCookie("t", CookieTransport::kHttps);
  for (const char* flag : {"; HttpOnly", "; SameSite=Strict", "; Secure"}) {
    EXPECT_NE(https.find(flag), std::string::npos) << flag;
  }
  EXPECT_NE(LogoutCookie(CookieTransport::kHttps).find("; Secure"), std::string::npos);
}

TEST(HttpAuthTest, LoopbackHosts) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "::", "10.0.0.7", "example.org", "1127.0.0.1", ""}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
}

TEST(LoginThrottleTest, WaitsDoubleAfterFreeFailuresPerAddress) {
  ManualClock clock(ManualClock::kDefaultWallMs, 1000);
  LoginThrottleOptions o;
  o.clock = &clock;
  LoginThrottle t(o);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(t.WaitMs("a"), 0);
    t.Failed("a");
  }
  EXPECT_EQ(t.WaitMs("a"), 0) << "three free failures";
  t.Failed("a");
  EXPECT_EQ(t.WaitMs("a"), 1000);
  EXPECT_EQ(t.WaitMs("b"), 0) << "per address";
  clock.Advance(1000);
  EXPECT_EQ(t.WaitMs("a"), 0);
  t.Failed("a");
  EXPECT_EQ(t.WaitMs("a"), 2000);
  for (int i = 0; i < 20; ++i) t.Failed("a");
  EXPECT_EQ(t.WaitMs("a"), 60000) << "capped";
  t.Succeeded("a");
  EXPECT_EQ(t.WaitMs("a"), 0);
  // Idle addresses are forgotten: a later failure starts from zero again.
  for (int i = 0; i < 4; ++i) t.Failed("c");
  clock.Advance(200000);
  t.Failed("d");
  t.Failed("c");
  EXPECT_EQ(t.WaitMs("c"), 0);
}

TEST(LoginThrottleTest, TracksABoundedNumberOfAddresses) {
  ManualClock clock;
  LoginThrottleOptions o;
  o.clock = &clock;
  o.max_addresses = 100;
  o.free_failures = 0;
  LoginThrottle t(o);
  for (int i = 0; i < 1000; ++i) {
    clock.Advance(1);
    t.Failed("10.0.0." + std::to_string(i));
  }
  EXPECT_EQ(t.WaitMs("10.0.0.0"), 0) << "the oldest was forgotten";
  EXPECT_GT(t.WaitMs("10.0.0.999"), 0);
}

}  // namespace
}  // namespace ablate
