// Diffing of a page's scope between polls; see live_stream.h for the message vocabulary.
#include "server/http/live_stream.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/http/json_reply.h"
#include "server/rpc/convert.h"

namespace ablate {
namespace {

// Caps per poll, so that one message stays small and a page catching up is not starved.
constexpr int kMaxPointsPerPoll = 5000;
constexpr int kMaxEventsPerPoll = 500;
// Events of the scope sent on the first poll: the latest ones.
constexpr size_t kFirstEvents = 200;
constexpr int kMaxSweeps = 100;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string FormatSse(const SseMessage& m) {
  return absl::StrCat("event: ", m.event, "\ndata: ", m.data, "\n\n");
}

LiveStream::LiveStream(ApiQueries* queries, LiveScope scope)
    : queries_(queries), scope_(std::move(scope)) {}

absl::StatusOr<std::vector<SseMessage>> LiveStream::Poll() {
  std::vector<SseMessage> out;
  backlog_ = false;
  absl::Status s;
  switch (scope_.kind) {
    case LiveScope::Kind::kSweeps:
      s = PollSweeps(&out);
      break;
    case LiveScope::Kind::kSweep:
      s = PollSweep(&out);
      break;
    case LiveScope::Kind::kRun:
      s = PollRun(&out);
      break;
    case LiveScope::Kind::kWorkers:
      s = PollWorkers(&out);
      break;
  }
  if (!s.ok()) return s;
  if (first_) out.push_back({"ready", absl::StrCat("{\"now_ms\":", NowMs(), "}")});
  first_ = false;
  return out;
}

void LiveStream::SendIfChanged(const std::string& key, const std::string& event, std::string json,
                               std::vector<SseMessage>* out) {
  std::string& last = sent_[key];
  if (last == json) return;
  last = json;
  out->push_back({event, std::move(json)});
}

absl::Status LiveStream::PollSweeps(std::vector<SseMessage>* out) {
  v1::ListSweepsRequest req;
  req.set_limit(kMaxSweeps);
  absl::StatusOr<v1::ListSweepsResponse> sweeps = queries_->ListSweeps(req);
  if (!sweeps.ok()) return sweeps.status();
  for (const v1::Sweep& sweep : sweeps->sweeps()) {
    SendIfChanged(absl::StrCat("sweep ", sweep.id()), "sweep", ProtoJson(sweep), out);
  }
  return absl::OkStatus();
}

absl::Status LiveStream::PollSweep(std::vector<SseMessage>* out) {
  absl::StatusOr<v1::Sweep> sweep = queries_->GetSweep(scope_.id);
  if (!sweep.ok()) return sweep.status();
  SendIfChanged("sweep", "sweep", ProtoJson(*sweep), out);
  RunFilter filter;
  filter.sweep_id = scope_.id;
  absl::StatusOr<std::vector<Run>> runs = queries_->store()->ListRuns(filter);
  if (!runs.ok()) return runs.status();
  for (const Run& run : *runs) {
    v1::Run proto;
    ToProto(run, &proto);  // as ListRuns answers
    SendIfChanged(absl::StrCat("run ", run.id), "run", ProtoJson(proto), out);
    if (absl::Status s = PollPoints(run, out); !s.ok()) return s;
  }
  return PollEvents(scope_.id, 0, out);
}

absl::Status LiveStream::PollRun(std::vector<SseMessage>* out) {
  absl::StatusOr<Run> run = queries_->store()->GetRun(scope_.id);
  if (!run.ok()) return run.status();
  absl::StatusOr<v1::Run> proto = queries_->GetRun(scope_.id);
  if (!proto.ok()) return proto.status();
  SendIfChanged("run", "run", ProtoJson(*proto), out);
  if (absl::Status s = PollPoints(*run, out); !s.ok()) return s;
  return PollEvents(run->sweep_id, run->id, out);
}

absl::Status LiveStream::PollWorkers(std::vector<SseMessage>* out) {
  absl::StatusOr<v1::ListWorkersResponse> workers = queries_->ListWorkers();
  if (!workers.ok()) return workers.status();
  SendIfChanged("workers", "workers", ProtoJson(*workers), out);
  return absl::OkStatus();
}

absl::Status LiveStream::PollEvents(int64_t sweep_id, int64_t run_id,
                                    std::vector<SseMessage>* out) {
  absl::StatusOr<std::vector<Event>> events = queries_->store()->ListEvents(
      sweep_id, run_id, last_event_id_, first_ ? 0 : kMaxEventsPerPoll);
  if (!events.ok()) return events.status();
  if (!first_ && events->size() == static_cast<size_t>(kMaxEventsPerPoll)) backlog_ = true;
  size_t begin = first_ && events->size() > kFirstEvents ? events->size() - kFirstEvents : 0;
  for (size_t i = begin; i < events->size(); ++i) {
    v1::Event proto;
    ToProto((*events)[i], &proto);
    out->push_back({"event", ProtoJson(proto)});
  }
  if (!events->empty()) last_event_id_ = events->back().id;
  return absl::OkStatus();
}

absl::Status LiveStream::PollPoints(const Run& run, std::vector<SseMessage>* out) {
  if (run.current_attempt_id == 0) return absl::OkStatus();  // queued: nothing new can come
  auto [it, fresh] = cursors_.try_emplace(run.id);
  Cursor& cursor = it->second;
  Store* store = queries_->store();
  if (first_) {  // start after what is stored now; the page reads that from the metrics API
    cursor.attempt_id = run.current_attempt_id;
    cursor.done = IsTerminal(run.state);
    if (cursor.done) return absl::OkStatus();
    absl::StatusOr<int64_t> last = queries_->LastStep(run);
    if (!last.ok()) return last.status();
    cursor.last_step = *last;
    return absl::OkStatus();
  }
  const bool reset = !fresh && cursor.attempt_id != run.current_attempt_id;
  if (cursor.attempt_id != run.current_attempt_id) cursor = Cursor{run.current_attempt_id};
  if (cursor.done) return absl::OkStatus();
  absl::StatusOr<std::vector<MetricPoint>> points =
      store->ListMetricPoints(run.id, cursor.last_step, kMaxPointsPerPoll);
  if (!points.ok()) return points.status();
  const bool capped = points->size() == static_cast<size_t>(kMaxPointsPerPoll);
  backlog_ = backlog_ || capped;
  if (IsTerminal(run.state) && !capped) cursor.done = true;
  if (points->empty() && !reset) return absl::OkStatus();
  if (!points->empty()) cursor.last_step = points->back().step;
  std::string data = absl::StrCat("{\"run_id\":", run.id, ",\"attempt_id\":", cursor.attempt_id,
                                  ",\"reset\":", reset ? "true" : "false", ",\"columns\":");
  AppendPointColumns(*points, scope_.series, &data);
  data.push_back('}');
  out->push_back({"points", std::move(data)});
  return absl::OkStatus();
}

}  // namespace ablate
