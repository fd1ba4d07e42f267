// Dashboard API latency (issue 7): a sweep of R runs x S steps is stored through the Store API,
// the dashboard server (the coordinator's own HTTP code) serves it on 127.0.0.1:0, and the
// variant-overlay request -- every run's train and val loss downsampled to at most M points per
// series, one GET -- is timed over many iterations from a keep-alive client. Baseline, measured in
// the same run: reading the same rows with raw SQLite (one prepared statement per run, no
// downsampling, no JSON). Three cases: a finished sweep (the curve cache warm after the first
// request), the same without the cache, and a live sweep whose 50 runs each report 10 more steps
// before every request. Prints p50/p99/max and ratios to the baseline; asserts no timing.
//
//   dashboard_api_bench [runs=50] [steps=3000] [max_points=1000] [iterations=200]
#include <httplib.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/http/dashboard_server.h"
#include "tests/http/sweep_fixture.h"

namespace ablate::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
};

Percentiles Measure(int iterations, const std::function<bool()>& once) {
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    auto t0 = Clock::now();
    if (!once()) return {};
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, size_t(q * ms.size()))]; };
  return {at(0.50), at(0.99), ms.back()};
}

// The raw read: the same runs' rows, in step order, straight from the file.
bool RawRead(sqlite3* db, const std::vector<int64_t>& attempts, size_t* rows) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT step, train_loss, val_loss, train_time_ms, tokens FROM metrics "
                         "WHERE attempt_id = ? ORDER BY step",
                         -1, &st, nullptr) != SQLITE_OK) {
    return false;
  }
  double sink = 0;
  *rows = 0;
  for (int64_t a : attempts) {
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, a);
    while (sqlite3_step(st) == SQLITE_ROW) {
      sink += sqlite3_column_double(st, 1) + sqlite3_column_double(st, 3);
      ++*rows;
    }
  }
  sqlite3_finalize(st);
  return sink != 0;
}

// Largest number of non-null values of any series in any run of an overlay answer.
size_t MaxSeriesPoints(const nlohmann::json& body) {
  size_t most = 0;
  for (const auto& run : body["runs"]) {
    for (const char* s : {"train_loss", "val_loss"}) {
      size_t n = 0;
      for (const auto& v : run["columns"][s]) n += v.is_null() ? 0 : 1;
      most = std::max(most, n);
    }
  }
  return most;
}

struct Setup {
  std::string dir;
  std::unique_ptr<Store> store;
  testing::FixtureSweep sweep;
};

// A fresh store in a temp dir with the fixture sweep: all runs finished, or all still running
// (their curves half done) for the live scenario.
bool Populate(const testing::FixtureShape& shape, const std::string& name, Setup* out) {
  out->dir = std::filesystem::temp_directory_path() / ("ablate-dashboard-bench-" + name);
  std::filesystem::remove_all(out->dir);
  std::filesystem::create_directories(out->dir);
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(out->dir + "/ablate.db");
  if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().ToString().c_str()), false;
  out->store = *std::move(store);
  absl::StatusOr<testing::FixtureSweep> sweep = testing::MakeFixtureSweep(*out->store, name, shape);
  if (!sweep.ok()) return std::fprintf(stderr, "%s\n", sweep.status().ToString().c_str()), false;
  out->sweep = *std::move(sweep);
  return true;
}

struct Timing {
  Percentiles overlay;
  double first_ms = 0;  // the first request after start (cold cache)
  size_t bytes = 0;
  size_t most_points = 0;
};

// Times the overlay request against a dashboard server on `setup`'s store. `between` runs
// (untimed) before each timed request.
bool TimeOverlay(Setup& setup, size_t cache_points, int max_points, int iterations,
                 const std::function<void()>& between, Timing* out) {
  ChangeFeed feed;
  DashboardOptions options;
  options.listen = "127.0.0.1:0";
  options.curve_cache_points = cache_points;
  absl::StatusOr<std::unique_ptr<DashboardServer>> server =
      DashboardServer::Start(options, setup.store.get(), &feed, {});
  if (!server.ok()) return std::fprintf(stderr, "%s\n", server.status().ToString().c_str()), false;
  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_keep_alive(true);
  std::string path = "/api/sweeps/" + std::to_string(setup.sweep.sweep_id) +
                     "/metrics?series=train_loss,val_loss&max_points=" + std::to_string(max_points);
  std::string body;
  auto get = [&] {
    httplib::Result res = client.Get(path);
    if (!res || res->status != 200) return false;
    body = std::move(res->body);
    return true;
  };
  auto t0 = Clock::now();
  if (!get()) return std::fprintf(stderr, "overlay request failed\n"), false;
  out->first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  out->overlay = Measure(iterations, [&] {
    between();
    auto start = Clock::now();
    bool ok = get();
    return ok ? start <= Clock::now() : false;
  });
  out->bytes = body.size();
  out->most_points = MaxSeriesPoints(nlohmann::json::parse(body));
  (*server)->Stop();
  return true;
}

void Row(const char* name, const Timing& t) {
  std::printf("%-40s %7.2f %7.2f %7.2f %9.1f %9zu %6zu\n", name, t.overlay.p50, t.overlay.p99,
              t.overlay.max, t.first_ms, t.bytes, t.most_points);
}

int Main(int argc, char** argv) {
  auto arg = [&](int i, int fallback) { return argc > i ? std::atoi(argv[i]) : fallback; };
  testing::FixtureShape shape;
  const int runs = arg(1, 50);
  shape.seeds = 5;
  shape.variants = std::max(1, runs / shape.seeds);
  shape.steps = arg(2, 3000);
  shape.val_every = 125;
  const int max_points = arg(3, 1000);
  const int iterations = arg(4, 200);

  Setup done;
  if (!Populate(shape, "finished", &done)) return 1;
  testing::FixtureShape live_shape = shape;
  live_shape.steps = 2 * shape.steps;  // running runs hold half: shape.steps points each
  live_shape.running = shape.variants * shape.seeds;
  Setup live;
  if (!Populate(live_shape, "live", &live)) return 1;
  std::printf(
      "%d runs x %lld steps, overlay = train+val loss of every run, <= %d points per "
      "series, %d iterations\n",
      shape.variants * shape.seeds, static_cast<long long>(shape.steps), max_points, iterations);

  // ABLATE_BENCH_ONLY=warm|uncached|live runs one case (for profiling); the others print zeros.
  const char* only_env = std::getenv("ABLATE_BENCH_ONLY");
  const std::string only = only_env ? only_env : "";
  auto wanted = [&](const char* name) { return only.empty() || only == name; };
  Timing warm, uncached, growing;
  auto nothing = [] {};
  if (wanted("warm") && !TimeOverlay(done, DashboardOptions().curve_cache_points, max_points,
                                     iterations, nothing, &warm)) {
    return 1;
  }
  if (wanted("uncached") && !TimeOverlay(done, 0, max_points, iterations, nothing, &uncached)) {
    return 1;
  }
  // Live: before each request every run reports 10 more steps, as training runs do.
  int64_t next_step = shape.steps, seq = 1000;
  auto train = [&] {
    for (size_t r = 0; r < live.sweep.runs.size(); ++r) {
      (void)testing::AppendFixtureBatch(*live.store, live.sweep.runs[r], live.sweep.attempts[r],
                                        static_cast<int>(r), next_step, 10, seq, live_shape);
    }
    next_step += 10;
    ++seq;
  };
  if (wanted("live") && !TimeOverlay(live, DashboardOptions().curve_cache_points, max_points,
                                     iterations, train, &growing)) {
    return 1;
  }

  sqlite3* db = nullptr;
  sqlite3_open_v2((done.dir + "/ablate.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  std::vector<int64_t> attempts;
  for (const auto& a : done.sweep.attempts) attempts.push_back(a.id);
  size_t rows = 0;
  Measure(5, [&] { return RawRead(db, attempts, &rows); });
  Percentiles raw = Measure(iterations, [&] { return RawRead(db, attempts, &rows); });
  sqlite3_close(db);

  std::printf("%-40s %7s %7s %7s %9s %9s %6s\n", "ms", "p50", "p99", "max", "first", "bytes",
              "pts");
  Row("finished sweep (curve cache warm)", warm);
  Row("finished sweep, no curve cache", uncached);
  Row("live sweep: +10 steps/run per request", growing);
  std::printf("%-40s %7.2f %7.2f %7.2f   (%zu rows, no JSON)\n",
              "baseline: raw SQLite read of the rows", raw.p50, raw.p99, raw.max, rows);
  std::printf("ratio to raw (p99): warm %.2fx, no cache %.2fx, live %.2fx\n",
              warm.overlay.p99 / raw.p99, uncached.overlay.p99 / raw.p99,
              growing.overlay.p99 / raw.p99);
  std::printf("target p99 < 50 ms (warm / live): %s / %s\n",
              warm.overlay.p99 < 50 ? "met" : "MISSED",
              growing.overlay.p99 < 50 ? "met" : "MISSED");
  done.store.reset();
  live.store.reset();
  std::filesystem::remove_all(done.dir);
  std::filesystem::remove_all(live.dir);
  return 0;
}

}  // namespace
}  // namespace ablate::bench

int main(int argc, char** argv) { return ablate::bench::Main(argc, argv); }
