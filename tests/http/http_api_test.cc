// The dashboard's JSON API over real HTTP: a DashboardServer on 127.0.0.1:0 in front of a store
// filled through the Store API, read with an HTTP client. Shapes, downsampling bounds, 404 and
// 400 as JSON, the client token, server-sent events, and the real ablate-coordinator binary
// with --http (port file, shutdown with a live stream open).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/http/api_queries.h"
#include "server/http/dashboard_server.h"
#include "server/http/http_auth.h"
#include "server/http/live_hub.h"
#include "server/http/live_server.h"
#include "tests/http/sweep_fixture.h"
#include "tests/util/subprocess.h"

namespace ablate {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(""); }

  void Start(const std::string& token) {
    server_.reset();
    store_ = Store::Open(":memory:").value();
    testing::FixtureShape shape;
    shape.variants = 3;
    shape.seeds = 2;
    shape.steps = 3000;
    shape.val_every = 100;
    shape.spike_step = 2222;
    shape.running = 1;
    shape.queued = 1;
    sweep_ = testing::MakeFixtureSweep(*store_, "api", shape).value();
    DashboardOptions options;
    options.listen = "127.0.0.1:0";
    options.client_token = token;
    options.live_min_interval = 20ms;
    server_ = DashboardServer::Start(options, store_.get(), &feed_, {}).value();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  // GET `path`; returns {status, parsed body}.
  std::pair<int, json> Get(const std::string& path, const httplib::Headers& headers = {}) {
    httplib::Result res = client_->Get(path, headers);
    if (!res) return {0, json()};
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json") << path;
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  void ExpectError(const std::string& path, int status, const std::string& code,
                   const std::string& words) {
    auto [got, body] = Get(path);
    EXPECT_EQ(got, status) << path;
    EXPECT_EQ(body["error"]["code"], code) << path << " " << body.dump();
    EXPECT_NE(body["error"]["message"].get<std::string>().find(words), std::string::npos)
        << path << ": " << body.dump();
  }

  const ablate::Run& finished_run() const { return sweep_.runs.front(); }
  std::string sweep_path() const { return "/api/sweeps/" + std::to_string(sweep_.sweep_id); }

  ChangeFeed feed_;
  std::unique_ptr<Store> store_;
  testing::FixtureSweep sweep_;
  std::unique_ptr<DashboardServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpApiTest, SweepsSweepRunsAndRunHaveTheProtoShapes) {
  auto [status, list] = Get("/api/sweeps");
  ASSERT_EQ(status, 200);
  ASSERT_EQ(list["sweeps"].size(), 1u);
  const json& s = list["sweeps"][0];
  EXPECT_EQ(s["name"], "api");
  EXPECT_EQ(s["state"], "SWEEP_RUNNING");
  EXPECT_EQ(s["counts"]["total"], 6);
  EXPECT_EQ(s["counts"]["succeeded"], 4);
  EXPECT_EQ(s["counts"]["queued"], 1);
  EXPECT_EQ(s["tags"], json({"fixture"}));
  json sweep = Get(sweep_path()).second;
  ASSERT_EQ(sweep["variants"].size(), 3u);
  EXPECT_EQ(sweep["variants"][1]["diff_json"], "{\"logit_softcap\":{\"from\":15,\"to\":16}}");
  json runs = Get(sweep_path() + "/runs").second;
  ASSERT_EQ(runs["runs"].size(), 6u);
  EXPECT_EQ(Get(sweep_path() + "/runs?state=queued").second["runs"].size(), 1u);
  EXPECT_EQ(Get("/api/runs?sweep_id=" + std::to_string(sweep_.sweep_id) + "&limit=2")
                .second["runs"]
                .size(),
            2u);
  json run = Get("/api/runs/" + std::to_string(finished_run().id)).second;
  EXPECT_EQ(run["state"], "RUN_SUCCEEDED");
  ASSERT_EQ(run["attempts"].size(), 1u);
  EXPECT_EQ(run["attempts"][0]["state"], "succeeded");
  EXPECT_FALSE(run["summary"]["final_val_loss"].is_null());
  EXPECT_EQ(run["id"], std::to_string(finished_run().id)) << "int64 as a string (proto3 JSON)";
}

TEST_F(HttpApiTest, WorkersPresetsAndEvents) {
  json workers = Get("/api/workers").second;
  ASSERT_EQ(workers["workers"].size(), 1u);
  EXPECT_EQ(workers["workers"][0]["id"], "fixture-worker");
  json presets = Get("/api/presets").second;
  EXPECT_GE(presets["presets"].size(), 5u);
  EXPECT_EQ(presets["scales"], json({"full", "small", "tiny"}));
  json events = Get(sweep_path() + "/events?limit=3").second;
  ASSERT_EQ(events["events"].size(), 3u);
  EXPECT_EQ(events["events"][0]["run_id"], "0") << "the sweep's own event first";
  EXPECT_NE(events["events"][0]["message"].get<std::string>().find("submitted"), std::string::npos);
  json after =
      Get(sweep_path() + "/events?after=" + events["events"][0]["id"].get<std::string>()).second;
  EXPECT_EQ(after["events"][0]["id"], events["events"][1]["id"]);
  json run_events = Get("/api/runs/" + std::to_string(finished_run().id) + "/events").second;
  for (const json& e : run_events["events"])
    EXPECT_EQ(e["run_id"], std::to_string(finished_run().id));
}

// Counts the non-null values of each series column of a curve.
std::map<std::string, size_t> Counts(const json& curve) {
  std::map<std::string, size_t> n;
  for (const char* s : {"train_loss", "val_loss", "lr", "step_ms"}) {
    if (!curve["columns"].contains(s)) continue;
    for (const json& v : curve["columns"][s]) n[s] += v.is_null() ? 0 : 1;
  }
  return n;
}

TEST_F(HttpApiTest, RunMetricsAreDownsampledWithinBoundsAndKeepSpikes) {
  json curve =
      Get("/api/runs/" + std::to_string(finished_run().id) + "/metrics?max_points=100").second;
  EXPECT_EQ(curve["total_points"], 3000);
  std::map<std::string, size_t> n = Counts(curve);
  EXPECT_LE(n["train_loss"], 100u);
  EXPECT_GE(n["train_loss"], 90u);
  EXPECT_EQ(n["val_loss"], 30u) << "30 evaluations fit under the limit: all kept";
  double highest = 0;
  for (const json& v : curve["columns"]["train_loss"]) {
    if (!v.is_null()) highest = std::max(highest, v.get<double>());
  }
  EXPECT_EQ(highest, 50.0) << "the spike at step 2222 survives";
  const size_t rows = curve["columns"]["step"].size();
  for (const char* col : {"train_time_ms", "tokens", "train_loss", "val_loss", "lr", "step_ms"}) {
    EXPECT_EQ(curve["columns"][col].size(), rows) << col;
  }
  json full =
      Get("/api/runs/" + std::to_string(finished_run().id) + "/metrics?max_points=20000").second;
  EXPECT_EQ(full["columns"]["step"].size(), 3000u);
}

TEST_F(HttpApiTest, SweepOverlayHasEveryStartedRunWithinTheLimit) {
  json overlay = Get(sweep_path() + "/metrics?max_points=1000&series=train_loss,val_loss").second;
  EXPECT_EQ(overlay["max_points"], 1000);
  ASSERT_EQ(overlay["runs"].size(), 5u) << "the queued run has no curve";
  for (const json& curve : overlay["runs"]) {
    EXPECT_FALSE(curve["columns"].contains("lr"));
    std::map<std::string, size_t> n = Counts(curve);
    EXPECT_LE(n["train_loss"], 1000u);
    EXPECT_GT(n["train_loss"], 0u);
  }
  EXPECT_EQ(overlay["runs"].back()["total_points"], 1500) << "the running run: half its curve";
}

TEST_F(HttpApiTest, UnknownIdsAre404AndMalformedQueriesAre400) {
  ExpectError("/api/sweeps/999", 404, "NOT_FOUND", "sweep 999");
  ExpectError("/api/sweeps/999/metrics", 404, "NOT_FOUND", "999");
  ExpectError("/api/runs/999", 404, "NOT_FOUND", "999");
  ExpectError("/api/runs/999/metrics", 404, "NOT_FOUND", "999");
  ExpectError("/api/live/sweeps/999", 404, "NOT_FOUND", "999");
  ExpectError("/api/nothing-here", 404, "NOT_FOUND", "/api/nothing-here");
  ExpectError("/api/sweeps/abc", 400, "INVALID_ARGUMENT", "'abc'");
  ExpectError("/api/runs/-1/metrics", 400, "INVALID_ARGUMENT", "'-1'");
  std::string run = "/api/runs/" + std::to_string(finished_run().id);
  ExpectError(run + "/metrics?max_points=1", 400, "INVALID_ARGUMENT", "max_points");
  ExpectError(run + "/metrics?max_points=ten", 400, "INVALID_ARGUMENT", "'ten'");
  ExpectError(run + "/metrics?series=loss", 400, "INVALID_ARGUMENT", "'loss'");
  ExpectError(run + "/metrics?max_point=5", 400, "INVALID_ARGUMENT", "'max_point'");
  ExpectError("/api/sweeps?state=sleeping", 400, "INVALID_ARGUMENT", "'sleeping'");
  ExpectError("/api/sweeps?limit=0", 400, "INVALID_ARGUMENT", "limit");
  ExpectError(sweep_path() + "/runs?state=done", 400, "INVALID_ARGUMENT", "'done'");
}

TEST_F(HttpApiTest, ClientTokenAsHeaderOrLoginCookie) {
  Start("s3cret");
  ExpectError("/api/sweeps", 401, "UNAUTHENTICATED", "token");
  ExpectError("/api/live/sweeps", 401, "UNAUTHENTICATED", "token");
  EXPECT_EQ(Get("/api/sweeps", {{"Authorization", "Bearer s3cret"}}).first, 200);
  EXPECT_EQ(Get("/api/sweeps", {{"Authorization", "Bearer nope"}}).first, 401);
  json auth = Get("/api/auth").second;
  EXPECT_EQ(auth, json({{"required", true}, {"authorized", false}}));

  httplib::Result wrong =
      client_->Post("/api/login", "token=nope&next=/workers", "application/x-www-form-urlencoded");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 303);
  std::string location = wrong->get_header_value("Location");
  EXPECT_EQ(location.rfind("/login?error=1&next=", 0), 0u) << location;
  EXPECT_NE(location.find("workers"), std::string::npos) << location;
  EXPECT_FALSE(wrong->has_header("Set-Cookie"));
  httplib::Result right = client_->Post("/api/login", "token=s3cret&next=//evil.example/",
                                        "application/x-www-form-urlencoded");
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 303);
  EXPECT_EQ(right->get_header_value("Location"), "/") << "only same-site paths follow a login";
  std::string cookie = right->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  httplib::Headers with_cookie = {{"Cookie", cookie.substr(0, cookie.find(';'))}};
  EXPECT_EQ(Get("/api/sweeps", with_cookie).first, 200);
  EXPECT_EQ(Get("/api/auth", with_cookie).second["authorized"], true);
}

// Issue 24 (10): a backslash is a slash to browsers, so "/\\evil" would leave the site.
TEST_F(HttpApiTest, LoginNeverRedirectsOffTheSite) {
  Start("s3cret");
  for (const char* next : {"/%5Cevil.example", "/%5C%5Cevil.example", "%2F%2Fevil.example",
                           "/%09/evil.example", "https://evil.example/", "/sweeps%0D%0AX:1"}) {
    httplib::Result r = client_->Post("/api/login", std::string("token=s3cret&next=") + next,
                                      "application/x-www-form-urlencoded");
    ASSERT_TRUE(r) << next;
    EXPECT_EQ(r->status, 303) << next;
    EXPECT_EQ(r->get_header_value("Location"), "/") << next;
  }
  httplib::Result ok = client_->Post("/api/login", "token=s3cret&next=%2Fsweeps%2F3%3Fx%3D1",
                                     "application/x-www-form-urlencoded");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->get_header_value("Location"), "/sweeps/3?x=1");
}

// Issue 24 (9): guessing through the cookie or GET /api/auth is slowed down like the login form.
TEST_F(HttpApiTest, GuessedCookiesAndAuthQueriesAreThrottled) {
  Start("s3cret");
  auto cookie = [](const std::string& token) {
    std::string c = LoginCookie(token);
    return httplib::Headers{{"Cookie", c.substr(0, c.find(';'))}};
  };
  int status = 0;
  for (int i = 0; i < 8 && status != 429; ++i) {
    status = Get("/api/sweeps", cookie("guess" + std::to_string(i))).first;
  }
  EXPECT_EQ(status, 429) << "wrong cookies are never throttled";
  EXPECT_EQ(Get("/api/sweeps", cookie("s3cret")).first, 429)
      << "not even looked at while throttled";
  EXPECT_EQ(Get("/api/auth", cookie("s3cret")).first, 429);
  EXPECT_EQ(Get("/api/auth").first, 200) << "asking without a token is not a guess";

  Start("s3cret");  // a fresh throttle: now guess through /api/auth alone
  status = 0;
  for (int i = 0; i < 8 && status != 429; ++i) {
    auto [got, body] = Get("/api/auth", {{"Authorization", "Bearer guess" + std::to_string(i)}});
    status = got;
    if (got == 200) {
      EXPECT_EQ(body["authorized"], false);
    }
  }
  EXPECT_EQ(status, 429) << "GET /api/auth answers guesses without limit";
}

// A TCP connection to 127.0.0.1:`port` from the loopback address `from` (127.0.0.0/8 is all
// this machine), so that one test can play several client addresses.
int ConnectFrom(const char* from, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, from, &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Issue 24 (7): clients that send their request a byte at a time must not take the threads that
// serve everyone else; each address has a cap, and a request has a deadline to arrive.
class SlowClientsTest : public HttpApiTest {
 protected:
  // The pool has kHttpRequestThreads (10) threads: fewer than the slow clients.
  void StartGated(ConnectionGateOptions gate) {
    server_.reset();
    DashboardOptions options;
    options.listen = "127.0.0.1:0";
    options.gate = gate;
    server_ = DashboardServer::Start(options, store_.get(), &feed_, {}).value();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(4, 0);
  }
  // `n` connections from `from`, each having sent the first byte of a request.
  std::vector<int> SlowClients(const char* from, int n) {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
      int fd = ConnectFrom(from, server_->port());
      if (fd >= 0 && send(fd, "G", 1, MSG_NOSIGNAL) == 1) fds.push_back(fd);
    }
    return fds;
  }
};

TEST_F(SlowClientsTest, ByteAtATimeClientsDoNotStopOthers) {
  StartGated({});
  std::vector<int> slow = SlowClients("127.0.0.2", 60);
  ASSERT_EQ(slow.size(), 60u);
  std::atomic<bool> done{false};
  std::thread dribble([&] {
    const std::string rest = "ET /api/sweeps HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaa";
    for (size_t i = 0; i < rest.size() && !done; ++i) {
      for (int fd : slow) (void)!send(fd, &rest[i], 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(200ms);
    }
  });
  std::this_thread::sleep_for(500ms);  // every slow client has been accepted by now
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Get("/api/sweeps").first, 200) << "request " << i << " behind 60 slow clients";
  }
  done = true;
  dribble.join();
  for (int fd : slow) close(fd);
}

TEST_F(SlowClientsTest, EachAddressHasACapAndRequestsADeadline) {
  ConnectionGateOptions gate;
  gate.max_per_address = 8;
  gate.request_deadline = 1000ms;
  StartGated(gate);
  std::vector<int> slow = SlowClients("127.0.0.3", 8);
  ASSERT_EQ(slow.size(), 8u);
  int ninth = ConnectFrom("127.0.0.3", server_->port());
  ASSERT_GE(ninth, 0);
  char buf[512] = {};
  ssize_t n = recv(ninth, buf, sizeof buf - 1, 0);
  EXPECT_GT(n, 0);
  EXPECT_EQ(std::string(buf).rfind("HTTP/1.1 503", 0), 0u) << buf;
  close(ninth);
  EXPECT_EQ(Get("/api/sweeps").first, 200) << "another address is not capped";
  // The deadline: the slow ones are closed unanswered (recv sees the end, not a response).
  timeval tv{5, 0};
  setsockopt(slow[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // (A socket closed with unread bytes ends with a reset rather than a FIN.)
  ssize_t end = recv(slow[0], buf, sizeof buf, 0);
  EXPECT_TRUE(end == 0 || (end < 0 && errno == ECONNRESET))
      << "a request that never ends is kept open: recv " << end << " " << strerror(errno);
  for (int fd : slow) close(fd);
  // Their slots are free again.
  int again = ConnectFrom("127.0.0.3", server_->port());
  ASSERT_GE(again, 0);
  const std::string req = "GET /api/sweeps HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(again, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  n = recv(again, buf, sizeof buf - 1, 0);
  EXPECT_GT(n, 0);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0).rfind("HTTP/1.1 200", 0), 0u);
  close(again);
}

TEST(ConnectionGateTest, RequestCompleteNeedsTheHeadAndTheAnnouncedBody) {
  EXPECT_FALSE(RequestComplete("GET / HTTP/1.1\r\nHost: x\r\n", 1024));
  EXPECT_TRUE(RequestComplete("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1024));
  EXPECT_TRUE(RequestComplete("GET / HTTP/1.1\nHost: x\n\n", 1024));
  const std::string post = "POST /api/login HTTP/1.1\r\ncontent-length: 5\r\n\r\n";
  EXPECT_FALSE(RequestComplete(post + "tok", 1024));
  EXPECT_TRUE(RequestComplete(post + "token", 1024));
  EXPECT_TRUE(RequestComplete(post, 4)) << "bodies over the wait limit go to the server";
  EXPECT_TRUE(RequestComplete(std::string(9000, 'a'), 1024)) << "over-long heads too";
}

// Reads a live stream on a thread until `done` says so or the stream ends.
struct StreamReader {
  absl::Mutex mu;
  std::string text ABSL_GUARDED_BY(mu);
  std::atomic<bool> stop{false};
  std::thread thread;

  void Start(int port, const std::string& path, httplib::Headers headers = {}) {
    thread = std::thread([this, port, path, headers] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(30, 0);
      c.Get(path, headers, [this](const char* data, size_t n) {
        absl::MutexLock lock(&mu);
        text.append(data, n);
        return !stop.load();
      });
    });
  }
  // What has arrived so far.
  std::string Text() {
    absl::MutexLock lock(&mu);
    return text;
  }
  bool Has(const std::string& needle) {
    absl::MutexLock lock(&mu);
    return text.find(needle) != std::string::npos;
  }
  bool WaitFor(const std::string& needle, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Has(needle)) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
};

TEST_F(HttpApiTest, LiveStreamSendsNewPointsAndEndsOnStop) {
  StreamReader reader;
  const ablate::Run& run = sweep_.runs.back();
  reader.Start(server_->port(), "/api/live/runs/" + std::to_string(run.id));
  ASSERT_TRUE(reader.WaitFor("event: ready", 10s)) << reader.Text();
  EXPECT_TRUE(reader.Has("event: run\n"));
  EXPECT_FALSE(reader.Has("event: points")) << "points already stored are not streamed";
  ASSERT_TRUE(testing::AppendFixtureBatch(*store_, run, sweep_.attempts.back(), 5, 1500, 3, 500,
                                          testing::FixtureShape())
                  .ok());
  feed_.Notify();
  ASSERT_TRUE(reader.WaitFor("\"step\":[1500,1501,1502]", 10s)) << reader.Text();
  auto t0 = std::chrono::steady_clock::now();
  feed_.Close();
  server_->Stop();
  reader.thread.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << "Stop with a stream open";
}

// Reads from `fd` (appending to *text) until *text holds `needle`, the peer closes, or `timeout`.
bool ReadUntil(int fd, std::string* text, const std::string& needle,
               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (text->find(needle) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[16384];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return text->find(needle) != std::string::npos;
    text->append(buf, static_cast<size_t>(n));
  }
  return true;
}

// Threads of this process now.
int ProcessThreads() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Issue 28: over plain HTTP a live page holds no thread. 200 pages on one sweep, from five
// addresses (each may hold 64 connections): every one gets the API's head and its snapshot, then
// the new points after a change, and the end of its body at Stop, while the process keeps the
// threads it had with none open. The thread-per-page server ran 32 pages at most here (the rest
// were answered 503) with 48 pool threads.
TEST_F(HttpApiTest, TwoHundredLivePagesHoldNoThreadEach) {
  const int idle = ProcessThreads();
  const std::string request = "GET /api/live/sweeps/" + std::to_string(sweep_.sweep_id) +
                              "?series=train_loss HTTP/1.1\r\nHost: x\r\n\r\n";
  std::vector<int> pages;
  std::vector<std::string> got(200);
  for (int i = 0; i < 200; ++i) {
    std::string from = "127.0.0." + std::to_string(2 + i % 5);
    int fd = ConnectFrom(from.c_str(), server_->port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    pages.push_back(fd);
  }
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(ReadUntil(pages[i], &got[i], "event: ready", 20s)) << i << ": " << got[i];
  }
  const std::string& head = got[0];
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << head;
  for (const char* line : {"Content-Type: text/event-stream\r\n", "Cache-Control: no-store\r\n",
                           "Transfer-Encoding: chunked\r\n", "X-Content-Type-Options: nosniff\r\n",
                           "Content-Security-Policy: default-src 'self'", "X-Ablate-Now-Ms: ",
                           "retry: 2000\n\n", "event: sweep\n", "event: run\n"}) {
    EXPECT_NE(head.find(line), std::string::npos) << line << " in " << head;
  }
  const int open = ProcessThreads();
  EXPECT_LE(open, idle) << "threads with 200 live pages open: " << open << ", idle: " << idle;
  std::cout << "threads: idle " << idle << ", with 200 live pages " << open << "\n";

  const ablate::Run& run = sweep_.runs.back();
  ASSERT_TRUE(testing::AppendFixtureBatch(*store_, run, sweep_.attempts.back(), 5, 1500, 3, 500,
                                          testing::FixtureShape())
                  .ok());
  feed_.Notify();
  for (int i = 0; i < 200; ++i) {
    EXPECT_TRUE(ReadUntil(pages[i], &got[i], "\"step\":[1500,1501,1502]", 10s)) << i;
  }
  for (int i = 0; i < 100; ++i) close(pages[i]);  // half the pages go away
  server_->Stop();
  for (int i = 100; i < 200; ++i) {
    EXPECT_TRUE(ReadUntil(pages[i], &got[i], "\r\n0\r\n\r\n", 5s)) << "the end of page " << i;
    close(pages[i]);
  }
}

// A live page that asks for what it may not have is answered as the API answers, and closed.
TEST_F(HttpApiTest, LiveRequestsAreCheckedAsTheApiChecksThem) {
  ExpectError("/api/live/sweeps/999", 404, "NOT_FOUND", "999");
  ExpectError("/api/live/runs/abc", 400, "INVALID_ARGUMENT", "run id must be a positive integer");
  ExpectError("/api/live/sweeps?max_points=3", 400, "INVALID_ARGUMENT",
              "unknown query parameter 'max_points'");
  ExpectError("/api/live/nothing", 404, "NOT_FOUND", "no such API path: GET /api/live/nothing");
  Start("s3cret");
  ExpectError("/api/live/workers", 401, "UNAUTHENTICATED", "client token");
  for (int i = 0; i < 4; ++i) {
    client_->Get("/api/live/workers", {{"Authorization", "Bearer wrong"}});
  }
  httplib::Result throttled =
      client_->Get("/api/live/workers", {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(throttled);
  EXPECT_EQ(throttled->status, 429) << "wrong tokens on live pages count as guesses";
  EXPECT_FALSE(throttled->get_header_value("Retry-After").empty());
}

// The live server on its own, over socket pairs: pages whose client went away are closed (and
// their gate slot released), and so is a page that stopped reading once its output has not moved
// for the stall limit, while a page beside it goes on.
TEST_F(HttpApiTest, LiveServerClosesPagesThatGoOrStopReading) {
  server_.reset();
  ApiQueries queries(store_.get(), &feed_, {}, 0);
  LiveHub hub(&queries, &feed_, 20ms);
  LoginThrottle throttle;
  std::atomic<int> streams{0};
  LiveServerOptions o;
  o.min_interval = 20ms;
  o.stall_limit = 300ms;
  LiveServer live(o, &hub, &feed_, &throttle, &streams);
  std::atomic<int> released{0};
  const std::string request =
      "GET /api/live/sweeps/" + std::to_string(sweep_.sweep_id) + " HTTP/1.1\r\n\r\n";
  auto open_page = [&](int* client) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    EXPECT_EQ(send(sv[1], request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    *client = sv[1];
    return sv[0];
  };
  for (int i = 0; i < 10; ++i) {
    int client;
    live.Take(open_page(&client), "a", [&] { ++released; });
    std::string text;
    ASSERT_TRUE(ReadUntil(client, &text, "event: ready", 10s)) << text;
    close(client);
  }
  for (int i = 0; i < 500 && (live.open() > 0 || released < 10); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(live.open(), 0);
  EXPECT_EQ(released.load(), 10);
  EXPECT_EQ(streams.load(), 0);

  int stuck_client, reading_client;
  int stuck = open_page(&stuck_client);
  int small = 4096;
  setsockopt(stuck, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  live.Take(stuck, "b", [&] { ++released; });
  live.Take(open_page(&reading_client), "c", [&] { ++released; });
  std::string reading;
  ASSERT_TRUE(ReadUntil(reading_client, &reading, "event: ready", 10s));
  const ablate::Run& run = sweep_.runs.back();
  for (int i = 0; i < 100 && released < 11; ++i) {  // points the stuck page never reads
    ASSERT_TRUE(testing::AppendFixtureBatch(*store_, run, sweep_.attempts.back(), 5, 2000 + 50 * i,
                                            50, 600 + i, testing::FixtureShape())
                    .ok());
    feed_.Notify();
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(released.load(), 11) << "the page that stopped reading is closed";
  EXPECT_EQ(live.open(), 1);
  reading.clear();
  EXPECT_TRUE(ReadUntil(reading_client, &reading, "\"step\":[2", 10s)) << "the other page goes on";
  live.Stop();
  EXPECT_EQ(released.load(), 12);
  close(stuck_client);
  close(reading_client);
}

// The dashboard's "now" comes from its injected clock (common/clock.h): the X-Ablate-Now-Ms of
// every API answer, by which pages turn timestamps into ages, and a live stream's "ready" now_ms;
// and the login throttle runs on the same clock, so its waits end when the clock says so.
TEST_F(HttpApiTest, NowIsTheInjectedClocksOnEveryAnswerAndStream) {
  ManualClock clock(1'767'225'600'000);
  DashboardOptions options;
  options.listen = "127.0.0.1:0";
  options.client_token = "s3cret";
  options.live_min_interval = 20ms;
  options.clock = &clock;
  server_ = DashboardServer::Start(options, store_.get(), &feed_, {}).value();
  client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  const httplib::Headers good = {{"Authorization", "Bearer s3cret"}};
  httplib::Result res = client_->Get("/api/sweeps", good);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("X-Ablate-Now-Ms"), "1767225600000");
  clock.Advance(1500);
  res = client_->Get("/api/sweeps", good);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("X-Ablate-Now-Ms"), "1767225601500");

  // Four wrong tokens: the fourth earns a 1 s wait, which passes only when the clock moves.
  for (int i = 0; i < 4; ++i) client_->Get("/api/sweeps", {{"Authorization", "Bearer no"}});
  EXPECT_EQ(Get("/api/sweeps", good).first, 429);
  std::this_thread::sleep_for(1100ms);
  EXPECT_EQ(Get("/api/sweeps", good).first, 429) << "real time does not end the wait";
  clock.Advance(1000);
  EXPECT_EQ(Get("/api/sweeps", good).first, 200);

  StreamReader reader;
  reader.Start(server_->port(), "/api/live/workers", good);
  EXPECT_TRUE(reader.WaitFor("{\"now_ms\":1767225602500}", 10s)) << reader.Text();
  reader.stop = true;
  feed_.Close();
  server_->Stop();
  reader.thread.join();
  server_.reset();  // before `clock` goes
}

TEST(CoordinatorHttpTest, ServesTheDashboardWritesItsPortAndStopsWithAStreamOpen) {
  testing::TempDir dir;
  std::string port_file = dir.path() + "/http-port";
  testing::Subprocess coordinator(
      {ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir", dir.path(), "--http",
       "127.0.0.1:0", "--http-port-file", port_file, "--web-root", ABLATE_WEB_ROOT},
      dir.path());
  for (int i = 0; i < 500 && !std::filesystem::exists(port_file); ++i)
    std::this_thread::sleep_for(20ms);
  int port = std::stoi(testing::ReadFile(port_file));
  httplib::Client client("127.0.0.1", port);
  httplib::Result sweeps = client.Get("/api/sweeps");
  ASSERT_TRUE(sweeps);
  EXPECT_EQ(sweeps->status, 200);
  EXPECT_EQ(sweeps->body, "{\"sweeps\":[]}");
  httplib::Result page = client.Get("/sweeps/3");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("/js/app.js"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  httplib::Result uplot = client.Get("/vendor/uplot/uPlot.esm.js");
  ASSERT_TRUE(uplot);
  EXPECT_EQ(uplot->status, 200) << "uPlot from web/node_modules (npm ci)";
  EXPECT_NE(coordinator.Stdout().find("dashboard on http://127.0.0.1:" + std::to_string(port)),
            std::string::npos);

  StreamReader reader;
  reader.Start(port, "/api/live/workers");
  ASSERT_TRUE(reader.WaitFor("event: ready", 10s));
  auto t0 = std::chrono::steady_clock::now();
  coordinator.Signal(SIGTERM);
  std::optional<testing::ProcessResult> exit = coordinator.Wait(10s);
  ASSERT_TRUE(exit.has_value()) << "still running 10 s after SIGTERM with a stream open";
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  reader.thread.join();
}

TEST(CoordinatorHttpTest, BadHttpAddressesAreRefusedByName) {
  testing::TempDir dir;
  for (const char* bad : {"8080", "127.0.0.1:http", "127.0.0.1:70000"}) {
    testing::ProcessResult r =
        testing::RunProcess({ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                             dir.path(), "--http", bad},
                            {}, 20s);
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_NE(r.err.find(std::string("--http '") + bad + "'"), std::string::npos) << r.err;
  }
  testing::ProcessResult missing = testing::RunProcess(
      {ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir", dir.path(), "--http",
       "127.0.0.1:0", "--web-root", dir.path() + "/nowhere"},
      {}, 20s);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("nowhere"), std::string::npos) << missing.err;
}

// The dashboard URL `ablate up` printed ("" until it has), e.g. "http://127.0.0.1:43511/".
std::string PrintedUrl(const testing::Subprocess& up) {
  std::string out = up.Stdout();
  size_t at = out.find("dashboard: http://");
  if (at == std::string::npos) return "";
  size_t end = out.find('\n', at);
  return end == std::string::npos ? "" : out.substr(at + 11, end - at - 11);
}

// Runs `ablate up` with `args` until it prints the dashboard URL and the local worker shows up
// in /api/workers; then stops it with SIGTERM. Returns the URL.
std::string UpAndDown(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> argv = {
      ABLATE_CLI_BIN, "up",     "--data-dir", dir,           "--listen",
      "127.0.0.1:0",  "--gpus", "none",       "--cpu-slots", "1"};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::Subprocess up(argv, dir);
  std::string url;
  for (int i = 0; i < 500 && url.empty(); ++i) {
    std::this_thread::sleep_for(20ms);
    url = PrintedUrl(up);
  }
  EXPECT_FALSE(url.empty()) << up.Stdout() << up.Stderr();
  if (url.empty()) return "";
  httplib::Client client(url.substr(0, url.size() - 1));
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    httplib::Result res = client.Get("/api/workers");
    seen = res && res->status == 200 && res->body.find("\"local\"") != std::string::npos;
    if (!seen) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(seen) << "the local worker in " << url << "api/workers";
  up.Signal(SIGTERM);
  std::optional<testing::ProcessResult> exit = up.Wait(30s);
  EXPECT_TRUE(exit.has_value() && exit->exit_code == 0);
  return url;
}

TEST(UpTest, PrintsTheDashboardUrlItServes) {
  testing::TempDir dir;
  std::string url = UpAndDown({"--http", "127.0.0.1:0"}, dir.path());
  EXPECT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;
}

TEST(UpTest, TakesAFreePortWhen8080IsBusy) {
  // Hold 8080 (if something else already does, the case is the same).
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(8080);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) listen(fd, 1);
  testing::TempDir dir;
  std::string url = UpAndDown({}, dir.path());
  close(fd);
  EXPECT_FALSE(url.empty());
  EXPECT_EQ(url.find(":8080/"), std::string::npos) << url;
}

}  // namespace
}  // namespace ablate
