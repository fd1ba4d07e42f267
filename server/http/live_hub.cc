// The shared polls behind the dashboard's live streams; see live_hub.h.
#include "server/http/live_hub.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/http/json_reply.h"
#include "server/convert/convert.h"

namespace ablate {
namespace {

// Caps per poll, so that one message stays small and a page catching up is not starved.
constexpr int kMaxPointsPerPoll = 5000;  // per run
constexpr int kMaxEventsPerPoll = 500;
// Events of the scope sent in a page's snapshot: the latest ones.
constexpr size_t kFirstEvents = 200;
constexpr int kMaxSweeps = 100;
// A run page's GetRun-shaped message is read again when its run, or an event of it, changed,
// and at least this often otherwise (an attempt's own fields can change alone).
constexpr auto kDetailMaxAge = std::chrono::seconds(5);
// Without a change in the ChangeFeed, a scope is polled again after this (heartbeat ages).
constexpr auto kIdlePoll = std::chrono::seconds(1);

}  // namespace

std::string FormatSse(const SseMessage& m) {
  return absl::StrCat("event: ", m.event, "\ndata: ", m.data, "\n\n");
}

LiveHub::LiveHub(ApiQueries* queries, const ChangeFeed* feed,
                 std::chrono::milliseconds min_interval, std::chrono::milliseconds max_lag)
    : queries_(queries), feed_(feed), min_interval_(min_interval), max_lag_(max_lag) {}

LiveHub::~LiveHub() = default;

absl::StatusOr<std::shared_ptr<SharedScope>> LiveHub::Find(const LiveScope& scope) {
  SharedScope::Kind kind = SharedScope::Kind::kSweep;
  int64_t sweep_id = 0;
  switch (scope.kind) {
    case LiveScope::Kind::kSweeps:
      kind = SharedScope::Kind::kSweeps;
      break;
    case LiveScope::Kind::kWorkers:
      kind = SharedScope::Kind::kWorkers;
      break;
    case LiveScope::Kind::kSweep:
      sweep_id = scope.id;
      break;
    case LiveScope::Kind::kRun: {
      absl::StatusOr<Run> run = queries_->store()->GetRun(scope.id);
      if (!run.ok()) return run.status();
      sweep_id = run->sweep_id;
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(scopes_, [](const auto& entry) { return entry.second.expired(); });
  std::weak_ptr<SharedScope>& slot = scopes_[{static_cast<int>(kind), sweep_id}];
  if (std::shared_ptr<SharedScope> shared = slot.lock()) return shared;
  auto shared = std::make_shared<SharedScope>(this, kind, sweep_id);
  slot = shared;
  return shared;
}

SharedScope::SharedScope(LiveHub* hub, Kind kind, int64_t sweep_id)
    : hub_(hub), kind_(kind), sweep_id_(sweep_id) {}

bool SharedScope::backlog() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backlog_;
}

absl::StatusOr<std::vector<SseMessage>> SharedScope::Join(const View& view, uint64_t* cursor) {
  std::lock_guard<std::mutex> lock(mu_);
  // Registered first, so that the poll reads what this page shows.
  const bool sweep_stale = view.kind == LiveScope::Kind::kSweep && sweep_pages_++ == 0;
  const bool detail_stale = view.kind == LiveScope::Kind::kRun && detail_pages_[view.run_id]++ == 0;
  absl::Status s = RefreshLocked();
  if (s.ok() && sweep_stale) s = PollSweepMessage(nullptr);
  if (s.ok() && detail_stale) s = PollRunDetail(view.run_id, nullptr);
  std::vector<SseMessage> out;
  absl::StatusOr<std::vector<Event>> events;
  if (s.ok()) {
    events = LatestEvents(view);
    s = events.status();
  }
  if (!s.ok()) {
    if (view.kind == LiveScope::Kind::kSweep) --sweep_pages_;
    if (view.kind == LiveScope::Kind::kRun && --detail_pages_[view.run_id] == 0) {
      detail_pages_.erase(view.run_id);
    }
    return s;
  }
  switch (view.kind) {
    case LiveScope::Kind::kSweeps:
      for (const auto& [id, json] : sweeps_) out.push_back({"sweep", json});
      break;
    case LiveScope::Kind::kWorkers:
      if (!workers_.empty()) out.push_back({"workers", workers_});
      break;
    case LiveScope::Kind::kSweep:
      out.push_back({"sweep", sweep_});
      for (const auto& [id, run] : runs_) {
        if (!run.json.empty()) out.push_back({"run", run.json});
      }
      break;
    case LiveScope::Kind::kRun:
      out.push_back({"run", runs_[view.run_id].detail});
      break;
  }
  for (const Event& event : *events) {
    v1::Event proto;
    ToProto(event, &proto);
    out.push_back({"event", ProtoJson(proto)});
  }
  *cursor = generation_;
  cursors_.insert(generation_);
  return out;
}

absl::StatusOr<std::vector<SseMessage>> SharedScope::Take(const View& view, uint64_t* cursor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = RefreshLocked(); !s.ok()) return s;
  if (!log_.empty() && log_.front().number > *cursor + 1) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this page fell more than ", hub_->max_lag_.count(),
        " ms behind its live stream and missed changes; reconnect to read the current state"));
  }
  std::vector<SseMessage> out;
  for (Generation& gen : log_) {
    if (gen.number <= *cursor) continue;
    for (Item& item : gen.items) {
      if (Wants(view, item)) out.push_back(MessageOf(view, item));
    }
  }
  if (auto it = cursors_.find(*cursor); it != cursors_.end()) cursors_.erase(it);
  *cursor = generation_;
  cursors_.insert(generation_);
  TrimLocked();
  return out;
}

void SharedScope::Leave(const View& view, uint64_t cursor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cursors_.find(cursor); it != cursors_.end()) cursors_.erase(it);
  if (view.kind == LiveScope::Kind::kSweep) --sweep_pages_;
  if (view.kind == LiveScope::Kind::kRun) {
    if (auto it = detail_pages_.find(view.run_id); it != detail_pages_.end() && --it->second == 0) {
      detail_pages_.erase(it);
      runs_[view.run_id].detail.clear();
    }
  }
  TrimLocked();
}

void SharedScope::TrimLocked() {
  const uint64_t oldest_wanted = cursors_.empty() ? generation_ : *cursors_.begin();
  const Clock::time_point too_old = Clock::now() - hub_->max_lag_;
  while (!log_.empty() && (log_.front().number <= oldest_wanted || log_.front().at < too_old)) {
    log_.pop_front();
  }
}

absl::Status SharedScope::RefreshLocked() {
  const Clock::time_point now = Clock::now();
  const ChangeFeed* feed = hub_->feed_;
  const uint64_t version = feed != nullptr ? feed->version() : 0;
  if (polled_ && !backlog_) {
    const Clock::duration age = now - last_poll_;
    if (age < hub_->min_interval_) return absl::OkStatus();
    if (feed != nullptr && version == last_version_ && age < kIdlePoll) return absl::OkStatus();
  }
  backlog_ = false;
  std::vector<Item> items;
  absl::Status s;
  switch (kind_) {
    case Kind::kSweeps:
      s = PollSweeps(&items);
      break;
    case Kind::kWorkers:
      s = PollWorkers(&items);
      break;
    case Kind::kSweep:
      s = PollSweep(&items);
      break;
  }
  hub_->polls_.fetch_add(1);
  if (!s.ok()) return s;
  const bool first = !polled_;
  polled_ = true;
  last_poll_ = now;
  last_version_ = version;  // read before the poll: a change during it is read by the next one
  // The first poll only sets the state that snapshots start from: no page can have a cursor yet.
  if (!first && !items.empty()) log_.push_back({++generation_, now, std::move(items)});
  TrimLocked();
  return absl::OkStatus();
}

absl::Status SharedScope::PollSweeps(std::vector<Item>* out) {
  v1::ListSweepsRequest req;
  req.set_limit(kMaxSweeps);
  absl::StatusOr<v1::ListSweepsResponse> sweeps = hub_->queries_->ListSweeps(req);
  if (!sweeps.ok()) return sweeps.status();
  std::map<int64_t, std::string> before(std::make_move_iterator(sweeps_.begin()),
                                        std::make_move_iterator(sweeps_.end()));
  sweeps_.clear();
  for (const v1::Sweep& sweep : sweeps->sweeps()) {
    std::string json = ProtoJson(sweep);
    auto it = before.find(sweep.id());
    if (it == before.end() || it->second != json) {
      out->emplace_back(Item::Kind::kSweepOfList, 0, json);
    }
    sweeps_.emplace_back(sweep.id(), std::move(json));
  }
  return absl::OkStatus();
}

absl::Status SharedScope::PollWorkers(std::vector<Item>* out) {
  absl::StatusOr<v1::ListWorkersResponse> workers = hub_->queries_->ListWorkers();
  if (!workers.ok()) return workers.status();
  std::string json = ProtoJson(*workers);
  if (json == workers_) return absl::OkStatus();
  workers_ = json;
  out->emplace_back(Item::Kind::kWorkers, 0, std::move(json));
  return absl::OkStatus();
}

absl::Status SharedScope::PollSweepMessage(std::vector<Item>* out) {
  absl::StatusOr<v1::Sweep> sweep = hub_->queries_->GetSweep(sweep_id_);
  if (!sweep.ok()) return sweep.status();
  std::string json = ProtoJson(*sweep);
  if (json == sweep_) return absl::OkStatus();
  sweep_ = json;
  if (out != nullptr) out->emplace_back(Item::Kind::kSweep, 0, std::move(json));
  return absl::OkStatus();
}

absl::Status SharedScope::PollRunDetail(int64_t run_id, std::vector<Item>* out) {
  absl::StatusOr<v1::Run> run = hub_->queries_->GetRun(run_id);
  if (!run.ok()) return run.status();
  RunState& state = runs_[run_id];
  state.detail_at = Clock::now();
  std::string json = ProtoJson(*run);
  if (json == state.detail) return absl::OkStatus();
  state.detail = json;
  if (out != nullptr) out->emplace_back(Item::Kind::kRunDetail, run_id, std::move(json));
  return absl::OkStatus();
}

absl::Status SharedScope::PollSweep(std::vector<Item>* out) {
  Store* store = hub_->queries_->store();
  const bool first = !polled_;
  if (sweep_pages_ > 0) {
    if (absl::Status s = PollSweepMessage(out); !s.ok()) return s;
  } else if (first) {
    if (absl::StatusOr<Sweep> sweep = store->GetSweep(sweep_id_); !sweep.ok()) {
      return sweep.status();
    }
  }
  RunFilter filter;
  filter.sweep_id = sweep_id_;
  absl::StatusOr<std::vector<Run>> runs = store->ListRuns(filter);
  if (!runs.ok()) return runs.status();
  const std::set<int64_t> changed = PollRuns(*runs, out);
  if (absl::Status s = PollPoints(*runs, first, out); !s.ok()) return s;
  absl::StatusOr<std::set<int64_t>> evented = PollEvents(first, out);
  if (!evented.ok()) return evented.status();
  return PollRunDetails(first, changed, *evented, out);
}

std::set<int64_t> SharedScope::PollRuns(const std::vector<Run>& runs, std::vector<Item>* out) {
  std::set<int64_t> changed;
  for (const Run& run : runs) {
    v1::Run proto;
    ToProto(run, &proto);  // as ListRuns answers
    std::string json = ProtoJson(proto);
    RunState& state = runs_[run.id];
    if (state.json == json) continue;
    state.json = json;
    changed.insert(run.id);
    out->emplace_back(Item::Kind::kRun, run.id, std::move(json));
  }
  return changed;
}

absl::Status SharedScope::PollPoints(const std::vector<Run>& runs, bool first,
                                     std::vector<Item>* out) {
  // New points of every run that can have some, in one read.
  struct Ask {
    int64_t run_id;
    bool reset;
    bool terminal;
  };
  std::vector<Ask> asks;
  std::vector<Store::PointsAfter> after;
  for (const Run& run : runs) {
    if (run.current_attempt_id == 0) continue;  // queued: nothing new can come
    auto [it, fresh] = point_cursors_.try_emplace(run.id);
    Cursor& cursor = it->second;
    if (first) {  // start after what is stored now; a page reads that from the metrics API
      cursor.attempt_id = run.current_attempt_id;
      cursor.done = IsTerminal(run.state);
      if (cursor.done) continue;
      absl::StatusOr<int64_t> last = hub_->queries_->LastStep(run);
      if (!last.ok()) return last.status();
      cursor.last_step = *last;
      continue;
    }
    const bool reset = !fresh && cursor.attempt_id != run.current_attempt_id;
    if (cursor.attempt_id != run.current_attempt_id) cursor = Cursor{run.current_attempt_id};
    if (cursor.done) continue;
    asks.push_back({run.id, reset, IsTerminal(run.state)});
    after.push_back({run.id, cursor.last_step});
  }
  if (asks.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<std::vector<MetricPoint>>> points =
      hub_->queries_->store()->ListMetricPointsOfRuns(after, kMaxPointsPerPoll);
  if (!points.ok()) return points.status();
  for (size_t i = 0; i < asks.size(); ++i) {
    std::vector<MetricPoint>& got = (*points)[i];
    Cursor& cursor = point_cursors_[asks[i].run_id];
    const bool capped = got.size() == static_cast<size_t>(kMaxPointsPerPoll);
    backlog_ = backlog_ || capped;
    if (asks[i].terminal && !capped) cursor.done = true;
    if (got.empty() && !asks[i].reset) continue;
    if (!got.empty()) cursor.last_step = got.back().step;
    out->emplace_back(asks[i].run_id, cursor.attempt_id, asks[i].reset, std::move(got));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::set<int64_t>> SharedScope::PollEvents(bool first, std::vector<Item>* out) {
  absl::StatusOr<std::vector<Event>> events = hub_->queries_->store()->ListEvents(
      sweep_id_, 0, last_event_id_, first ? 0 : kMaxEventsPerPoll);
  if (!events.ok()) return events.status();
  if (!events->empty()) last_event_id_ = events->back().id;
  std::set<int64_t> evented;
  if (first) return evented;
  if (events->size() == static_cast<size_t>(kMaxEventsPerPoll)) backlog_ = true;
  for (const Event& event : *events) {
    v1::Event proto;
    ToProto(event, &proto);
    evented.insert(event.run_id);
    out->emplace_back(Item::Kind::kEvent, event.run_id, ProtoJson(proto));
  }
  return evented;
}

absl::Status SharedScope::PollRunDetails(bool first, const std::set<int64_t>& changed,
                                         const std::set<int64_t>& evented,
                                         std::vector<Item>* out) {
  // The GetRun-shaped message of each run that a run page follows, when it may have changed.
  const Clock::time_point now = Clock::now();
  for (const auto& [run_id, pages] : detail_pages_) {
    const RunState& state = runs_[run_id];
    if (!first && !changed.contains(run_id) && !evented.contains(run_id) &&
        now - state.detail_at < kDetailMaxAge) {
      continue;
    }
    if (absl::Status s = PollRunDetail(run_id, out); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Event>> SharedScope::LatestEvents(const View& view) const {
  if (view.kind != LiveScope::Kind::kSweep && view.kind != LiveScope::Kind::kRun) {
    return std::vector<Event>();
  }
  const int64_t run_id = view.kind == LiveScope::Kind::kRun ? view.run_id : 0;
  absl::StatusOr<std::vector<Event>> events =
      hub_->queries_->store()->ListEvents(sweep_id_, run_id, 0, 0);
  if (!events.ok()) return events.status();
  // Up to what the scope has polled: later ones come with the generations after the snapshot.
  std::erase_if(*events, [&](const Event& e) { return e.id > last_event_id_; });
  if (events->size() > kFirstEvents) {
    events->erase(events->begin(), events->end() - static_cast<std::ptrdiff_t>(kFirstEvents));
  }
  return events;
}

bool SharedScope::Wants(const View& view, const Item& item) const {
  switch (view.kind) {
    case LiveScope::Kind::kSweeps:
      return item.kind == Item::Kind::kSweepOfList;
    case LiveScope::Kind::kWorkers:
      return item.kind == Item::Kind::kWorkers;
    case LiveScope::Kind::kSweep:
      return item.kind == Item::Kind::kSweep || item.kind == Item::Kind::kRun ||
             item.kind == Item::Kind::kEvent || item.kind == Item::Kind::kPoints;
    case LiveScope::Kind::kRun:
      return item.run_id == view.run_id &&
             (item.kind == Item::Kind::kRunDetail || item.kind == Item::Kind::kEvent ||
              item.kind == Item::Kind::kPoints);
  }
  return false;
}

SseMessage SharedScope::MessageOf(const View& view, Item& item) const {
  switch (item.kind) {
    case Item::Kind::kSweepOfList:
    case Item::Kind::kSweep:
      return {"sweep", item.json};
    case Item::Kind::kRun:
    case Item::Kind::kRunDetail:
      return {"run", item.json};
    case Item::Kind::kWorkers:
      return {"workers", item.json};
    case Item::Kind::kEvent:
      return {"event", item.json};
    case Item::Kind::kPoints:
      break;
  }
  // Formatted once per series selection, whatever the number of pages.
  auto [it, fresh] = item.formatted.try_emplace(view.series.Bits());
  if (fresh) {
    std::string& data = it->second;
    data = absl::StrCat("{\"run_id\":", item.run_id, ",\"attempt_id\":", item.attempt_id,
                        ",\"reset\":", item.reset ? "true" : "false", ",\"columns\":");
    AppendPointColumns(item.points, view.series, &data);
    data.push_back('}');
  }
  return {"points", it->second};
}

}  // namespace ablate
