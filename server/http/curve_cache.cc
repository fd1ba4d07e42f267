// The dashboard's curve cache; see curve_cache.h for what is read when.
#include "server/http/curve_cache.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ablate {

struct CurveCache::Entry {
  std::mutex mu;
  int64_t attempt_id ABSL_GUARDED_BY(mu) = 0;
  bool terminal ABSL_GUARDED_BY(mu) = false;  // the run had finished when last read
  std::vector<MetricPoint> points ABSL_GUARDED_BY(mu);  // every stored point, step order
  std::map<std::pair<int, unsigned>, std::string> json ABSL_GUARDED_BY(mu);  // (max_points, series)
  // Guarded by the cache's mu_ (an annotation cannot name another object's mutex).
  std::list<int64_t>::iterator lru;
  size_t counted = 0;  // points in points_held_
};

namespace {

constexpr size_t kMaxRenderingsPerRun = 8;

std::string Render(const Run& run, int64_t attempt_id, const std::vector<MetricPoint>& points,
                   int max_points, const SeriesSet& series) {
  std::string out = absl::StrCat("{\"run_id\":", run.id, ",\"attempt_id\":", attempt_id,
                                 ",\"total_points\":", points.size(), ",\"columns\":");
  AppendDownsampledColumns(points, max_points, series, &out);
  out.push_back('}');
  return out;
}

// Brings `points` of the run up to date: only the new points, unless the attempt changed or the
// run is seen finished for the first time (then all of them, once).
absl::Status Update(const Store& store, const Run& run, std::vector<MetricPoint>* points,
                    int64_t* attempt_id, bool* terminal,
                    std::map<std::pair<int, unsigned>, std::string>* json) {
  const bool finished = IsTerminal(run.state);
  const bool reload = *attempt_id != run.current_attempt_id || (finished && !*terminal);
  if (!reload && *terminal) return absl::OkStatus();
  int64_t after = reload || points->empty() ? INT64_MIN : points->back().step;
  absl::StatusOr<std::vector<MetricPoint>> fresh = store.ListMetricPoints(run.id, after, 0);
  if (!fresh.ok()) return fresh.status();
  if (reload) {
    *points = *std::move(fresh);
    json->clear();
  } else if (!fresh->empty()) {
    points->insert(points->end(), fresh->begin(), fresh->end());
    json->clear();
  }
  *attempt_id = run.current_attempt_id;
  *terminal = finished;
  return absl::OkStatus();
}

}  // namespace

CurveCache::CurveCache(const Store* store, size_t max_points_held)
    : store_(store), max_points_held_(max_points_held) {}

absl::StatusOr<std::string> CurveCache::CurveJson(const Run& run, int max_points,
                                                  const SeriesSet& series) {
  if (max_points_held_ == 0 || run.current_attempt_id == 0) {
    absl::StatusOr<MetricCurve> curve = store_->GetMetrics(run.id, max_points);
    if (!curve.ok()) return curve.status();
    std::string out;
    AppendCurveJson(*curve, series, &out);
    return out;
  }
  std::shared_ptr<Entry> entry = Find(run.id);
  std::string out;
  size_t held = 0;
  {
    std::lock_guard<std::mutex> lock(entry->mu);
    absl::Status s =
        Update(*store_, run, &entry->points, &entry->attempt_id, &entry->terminal, &entry->json);
    if (!s.ok()) return s;
    auto key = std::make_pair(max_points, series.Bits());
    auto it = entry->json.find(key);
    if (it == entry->json.end()) {
      if (entry->json.size() >= kMaxRenderingsPerRun) entry->json.clear();
      it = entry->json
               .emplace(key, Render(run, entry->attempt_id, entry->points, max_points, series))
               .first;
    }
    out = it->second;
    held = entry->points.size();
  }
  Account(run.id, held);
  return out;
}

absl::StatusOr<int64_t> CurveCache::LastStep(const Run& run) {
  if (max_points_held_ == 0 || run.current_attempt_id == 0) {
    absl::StatusOr<std::vector<MetricPoint>> points =
        store_->ListMetricPoints(run.id, INT64_MIN, 0);
    if (!points.ok()) return points.status();
    return points->empty() ? INT64_MIN : points->back().step;
  }
  std::shared_ptr<Entry> entry = Find(run.id);
  int64_t last = INT64_MIN;
  size_t held = 0;
  {
    std::lock_guard<std::mutex> lock(entry->mu);
    absl::Status s =
        Update(*store_, run, &entry->points, &entry->attempt_id, &entry->terminal, &entry->json);
    if (!s.ok()) return s;
    if (!entry->points.empty()) last = entry->points.back().step;
    held = entry->points.size();
  }
  Account(run.id, held);
  return last;
}

std::shared_ptr<CurveCache::Entry> CurveCache::Find(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = entries_.try_emplace(run_id);
  if (fresh) {
    it->second = std::make_shared<Entry>();
    lru_.push_front(run_id);
  } else {
    lru_.splice(lru_.begin(), lru_, it->second->lru);
  }
  it->second->lru = lru_.begin();
  return it->second;
}

void CurveCache::Account(int64_t run_id, size_t points_now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(run_id);
  if (it == entries_.end()) return;  // evicted meanwhile
  points_held_ = points_held_ - it->second->counted + points_now;
  it->second->counted = points_now;
  while (points_held_ > max_points_held_ && lru_.size() > 1) {
    int64_t victim = lru_.back();
    if (victim == run_id) break;  // the newest use is never evicted for itself
    auto v = entries_.find(victim);
    points_held_ -= v->second->counted;
    entries_.erase(v);
    lru_.pop_back();
  }
}

}  // namespace ablate
