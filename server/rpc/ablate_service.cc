// Client service handlers. Each checks the token, calls the core and translates the result.
#include "server/rpc/ablate_service.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/message_limits.h"
#include "server/convert/convert.h"
#include "server/rpc/grpc_status.h"
#include "server/sweep/sweep_spec.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"

namespace ablate {
namespace {

constexpr int kDefaultPage = 100;
constexpr int kMaxPage = 10000;
constexpr auto kWatchTick = std::chrono::milliseconds(1000);
// A watch stream polls the store at most this often. Under load the feed moves thousands of
// times a second (each metric batch moves it), and streams that polled on every move took the
// cores from the writers: 50 WatchSweep streams on 200 runs at 20 steps/s cut ingest from ~3000
// to 320 points/s, p99 send->Ack 55 s (bench/coordinator/watch_load_bench.cc, NOTES.md).
// `ablate watch` redraws a few times a second at most; the dashboard's streams wait as long.
// WatchSweep streams on one sweep share one poll per interval (sweep_watch_cache.h).
constexpr auto kWatchMinInterval = std::chrono::milliseconds(250);

// Waits for the feed to move past `version` (at most kWatchTick), then until kWatchMinInterval
// after `last_poll`, so that a burst of changes costs one poll; stops waiting (within that
// interval) when the client goes away or the feed closes. Returns the version to wait past next (changes during the wait
// are read by the poll that follows, and wake the next wait at once).
uint64_t WaitToPoll(ChangeFeed& feed, grpc::ServerContext& ctx, uint64_t version,
                    std::chrono::steady_clock::time_point last_poll) {
  version = feed.WaitPast(version, kWatchTick);
  const auto next = last_poll + kWatchMinInterval;
  for (auto now = std::chrono::steady_clock::now(); now < next && !ctx.IsCancelled() &&
                                                    !feed.closed();
       now = std::chrono::steady_clock::now()) {
    std::this_thread::sleep_for(next - now);  // in one piece: at most kWatchMinInterval
  }
  return version;
}

int PageSize(int requested, int fallback) {
  if (requested <= 0) return fallback;
  return requested > kMaxPage ? kMaxPage : requested;
}

bool SweepFinished(SweepState s) {
  return s == SweepState::kSucceeded || s == SweepState::kFailed || s == SweepState::kCancelled;
}

// What a watcher has already been told about a run; a change in any of it is news.
struct RunFingerprint {
  RunState state;
  int64_t steps;
  int attempts_used;
  bool operator==(const RunFingerprint&) const = default;
};

RunFingerprint Fingerprint(const Run& r) { return {r.state, r.summary.steps, r.attempts_used}; }

// One line per distinct reason among a sweep's queued runs, most common first:
// "12 queued runs: no connected worker has dataset 'fineweb10B'".
std::vector<std::string> SummarizeWaiting(const std::vector<Run>& queued,
                                          const std::map<int64_t, std::string>& by_run) {
  std::map<std::string, int> count;
  for (const Run& r : queued) {
    if (auto it = by_run.find(r.id); it != by_run.end()) ++count[it->second];
  }
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [reason, n] : count) order.push_back({-n, reason});
  std::sort(order.begin(), order.end());
  std::vector<std::string> lines;
  for (const auto& [n, reason] : order) {
    lines.push_back(std::to_string(-n) + (n == -1 ? " queued run: " : " queued runs: ") + reason);
  }
  return lines;
}

absl::Status FillWaitingReasons(Store& store, int64_t sweep_id,
                                const std::map<int64_t, std::string>& by_run, v1::Sweep* out) {
  RunFilter queued;
  queued.sweep_id = sweep_id;
  queued.state = RunState::kQueued;
  absl::StatusOr<std::vector<Run>> runs = store.ListRuns(queued);
  if (!runs.ok()) return runs.status();
  for (std::string& line : SummarizeWaiting(*runs, by_run)) {
    out->add_waiting_reasons(std::move(line));
  }
  return absl::OkStatus();
}

}  // namespace

AblateServiceImpl::AblateServiceImpl(Store* store, ChangeFeed* feed, const TokenAuth* auth,
                                     ServiceHooks hooks)
    : store_(store),
      feed_(feed),
      auth_(auth),
      hooks_(std::move(hooks)),
      watch_cache_(std::make_unique<SweepWatchCache>(
          store,
          [this](int64_t id, v1::Sweep* out) { return FillSweep(id, /*full=*/false, out); },
          kWatchMinInterval)) {}

absl::Status AblateServiceImpl::FillSweep(int64_t id, bool full, v1::Sweep* out) {
  absl::StatusOr<Sweep> sweep = store_->GetSweep(id);
  if (!sweep.ok()) return sweep.status();
  ToProto(*sweep, out);
  absl::StatusOr<std::map<RunState, int>> counts = store_->CountRunsByState(id);
  if (!counts.ok()) return counts.status();
  ToProto(*counts, out->mutable_counts());
  if (full && hooks_.waiting_reasons && (*counts)[RunState::kQueued] > 0) {
    absl::Status s = FillWaitingReasons(*store_, id, hooks_.waiting_reasons(), out);
    if (!s.ok()) return s;
  }
  if (full) {
    out->set_spec_yaml(sweep->spec_yaml);
    absl::StatusOr<std::vector<Variant>> variants = store_->ListVariants(id);
    if (!variants.ok()) return variants.status();
    for (const Variant& v : *variants) ToProto(v, out->add_variants());
    RunFilter filter;
    filter.sweep_id = id;
    absl::StatusOr<std::vector<Run>> runs = store_->ListRuns(filter);
    if (!runs.ok()) return runs.status();
    FillDispatchBlocks(*std::move(runs), out);
  }
  return absl::OkStatus();
}

grpc::Status AblateServiceImpl::SubmitSweep(grpc::ServerContext* ctx,
                                            const v1::SubmitSweepRequest* req,
                                            v1::SubmitSweepResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  std::string file = req->file_name().empty() ? "<spec>" : req->file_name();
  absl::StatusOr<ExpandedSweep> expanded =
      ParseSweepSpec(req->spec_yaml(), file, UploadsFromProto(req->scripts()));
  if (!expanded.ok()) return ToGrpc(expanded.status());
  if (hooks_.check_sweep) {
    // Every script variant names a snapshot; a built-in sweep has none.
    const bool runs_scripts = !expanded->snapshots.empty();
    if (absl::Status s = hooks_.check_sweep(expanded->sweep, runs_scripts); !s.ok()) {
      return ToGrpc(absl::Status(s.code(), file + ": " + std::string(s.message())));
    }
  }
  if (req->dry_run()) {
    ToProto(expanded->sweep, resp->mutable_sweep());
    for (const Variant& v : expanded->variants) ToProto(v, resp->mutable_sweep()->add_variants());
    for (const Run& r : expanded->runs) ToProto(r, resp->add_runs());
    FillDispatchBlocks(expanded->runs, resp->mutable_sweep());
    for (const std::string& note : expanded->notes) resp->add_notes(note);
    resp->mutable_sweep()->mutable_counts()->set_total(expanded->runs.size());
    resp->mutable_sweep()->mutable_counts()->set_queued(expanded->runs.size());
    return grpc::Status::OK;
  }
  // Snapshots first: a sweep never names a hash the store lacks (an unused snapshot left by a
  // failed CreateSweep is harmless, and stored once whatever happens).
  for (const auto& [hash, files] : expanded->snapshots) {
    if (absl::Status s = store_->PutSnapshot(hash, files); !s.ok()) return ToGrpc(s);
  }
  absl::StatusOr<int64_t> id =
      store_->CreateSweep(expanded->sweep, expanded->variants, expanded->runs);
  if (!id.ok()) return ToGrpc(id.status());
  feed_->Notify();
  if (hooks_.on_submit) hooks_.on_submit();
  if (absl::Status s = FillSweep(*id, /*full=*/true, resp->mutable_sweep()); !s.ok()) {
    return ToGrpc(s);
  }
  RunFilter filter;
  filter.sweep_id = *id;
  filter.limit = kMaxPage * 10;
  absl::StatusOr<std::vector<Run>> runs = store_->ListRuns(filter);
  if (!runs.ok()) return ToGrpc(runs.status());
  for (const Run& r : *runs) ToProto(r, resp->add_runs());
  for (const std::string& note : expanded->notes) resp->add_notes(note);
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::UploadSweep(grpc::ServerContext* ctx,
                                            grpc::ServerReader<v1::SubmitSweepChunk>* reader,
                                            v1::SubmitSweepResponse* resp) {
  // Before the first chunk is read: without the token nothing is buffered.
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  std::string bytes;
  v1::SubmitSweepChunk chunk;
  while (reader->Read(&chunk)) {
    if (bytes.size() + chunk.data().size() > kMaxUploadBytes) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("the sweep upload is over ", kMaxUploadBytes,
                                       " bytes (96 MiB); make its scripts smaller"));
    }
    bytes += chunk.data();
  }
  v1::SubmitSweepRequest req;
  if (!req.ParseFromString(bytes)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the uploaded bytes are not a SubmitSweepRequest");
  }
  bytes = std::string();  // the parsed copy is all that is needed now
  return SubmitSweep(ctx, &req, resp);
}

grpc::Status AblateServiceImpl::ListSweeps(grpc::ServerContext* ctx,
                                           const v1::ListSweepsRequest* req,
                                           v1::ListSweepsResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  SweepFilter filter;
  filter.state = FromProto(req->state());
  if (!req->tag().empty()) filter.tag = req->tag();
  filter.limit = PageSize(req->limit(), kDefaultPage);
  filter.offset = req->offset() < 0 ? 0 : req->offset();
  absl::StatusOr<std::vector<Sweep>> sweeps = store_->ListSweeps(filter);
  if (!sweeps.ok()) return ToGrpc(sweeps.status());
  for (const Sweep& sw : *sweeps) {
    v1::Sweep* out = resp->add_sweeps();
    ToProto(sw, out);
    absl::StatusOr<std::map<RunState, int>> counts = store_->CountRunsByState(sw.id);
    if (!counts.ok()) return ToGrpc(counts.status());
    ToProto(*counts, out->mutable_counts());
  }
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::GetSweep(grpc::ServerContext* ctx, const v1::GetSweepRequest* req,
                                         v1::Sweep* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  return ToGrpc(FillSweep(req->id(), /*full=*/true, resp));
}

grpc::Status AblateServiceImpl::CancelSweep(grpc::ServerContext* ctx,
                                            const v1::CancelSweepRequest* req, v1::Sweep* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  absl::StatusOr<std::vector<int64_t>> active = store_->CancelSweep(req->id());
  if (!active.ok()) return ToGrpc(active.status());
  if (hooks_.on_cancel && !active->empty()) hooks_.on_cancel(*active);
  feed_->Notify();
  return ToGrpc(FillSweep(req->id(), /*full=*/false, resp));
}

grpc::Status AblateServiceImpl::ListRuns(grpc::ServerContext* ctx, const v1::ListRunsRequest* req,
                                         v1::ListRunsResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  RunFilter filter;
  if (req->sweep_id() != 0) {
    filter.sweep_id = req->sweep_id();
    if (absl::StatusOr<Sweep> sw = store_->GetSweep(req->sweep_id()); !sw.ok()) {
      return ToGrpc(sw.status());
    }
  }
  filter.state = FromProto(req->state());
  filter.limit = PageSize(req->limit(), kMaxPage);
  filter.offset = req->offset() < 0 ? 0 : req->offset();
  absl::StatusOr<std::vector<Run>> runs = store_->ListRuns(filter);
  if (!runs.ok()) return ToGrpc(runs.status());
  for (const Run& r : *runs) ToProto(r, resp->add_runs());
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::GetRun(grpc::ServerContext* ctx, const v1::GetRunRequest* req,
                                       v1::Run* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  absl::StatusOr<Run> run = store_->GetRun(req->id());
  if (!run.ok()) return ToGrpc(run.status());
  ToProto(*run, resp);
  absl::StatusOr<std::vector<Attempt>> attempts = store_->ListAttempts(run->id);
  if (!attempts.ok()) return ToGrpc(attempts.status());
  for (const Attempt& a : *attempts) ToProto(a, resp->add_attempts());
  absl::StatusOr<std::vector<Variant>> variants = store_->ListVariants(run->sweep_id);
  if (!variants.ok()) return ToGrpc(variants.status());
  for (const Variant& v : *variants) {
    if (v.id != run->variant_id) continue;
    nlohmann::json config = nlohmann::json::parse(v.config_json, nullptr, false);
    if (config.is_object()) config["seed"] = run->seed;
    resp->set_config_json(CanonicalJson(config));
  }
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::WatchSweep(grpc::ServerContext* ctx,
                                           const v1::WatchSweepRequest* req,
                                           grpc::ServerWriter<v1::SweepUpdate>* writer) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  std::map<int64_t, RunFingerprint> told;
  int64_t last_event = 0;
  bool first = true;
  v1::RunCounts last_counts;
  uint64_t version = feed_->version();
  // The store is read by the sweep's poll that every stream on it shares.
  std::shared_ptr<SweepWatchCache::Entry> shared = watch_cache_->Acquire(req->id());
  while (!ctx->IsCancelled()) {
    const auto polled = std::chrono::steady_clock::now();
    absl::StatusOr<std::shared_ptr<const SweepWatchCache::Snapshot>> snapshot = shared->Get();
    if (!snapshot.ok()) return ToGrpc(snapshot.status());
    const SweepWatchCache::Snapshot& now = **snapshot;
    v1::SweepUpdate update;
    *update.mutable_sweep() = now.sweep;
    for (const Run& r : now.runs) {
      auto [it, fresh] = told.try_emplace(r.id, Fingerprint(r));
      if (fresh || !(it->second == Fingerprint(r))) {
        it->second = Fingerprint(r);
        ToProto(r, update.add_runs());
      }
    }
    if (last_event >= now.events_floor) {
      auto e = std::upper_bound(now.events.begin(), now.events.end(), last_event,
                                [](int64_t id, const Event& ev) { return id < ev.id; });
      for (int n = 0; e != now.events.end() && n < SweepWatchCache::kEventsPerPoll; ++e, ++n) {
        ToProto(*e, update.add_events());
        last_event = e->id;
      }
    } else {  // further behind than the shared poll keeps
      absl::StatusOr<std::vector<Event>> events =
          store_->ListEvents(req->id(), 0, last_event, SweepWatchCache::kEventsPerPoll);
      if (!events.ok()) return ToGrpc(events.status());
      for (const Event& e : *events) {
        ToProto(e, update.add_events());
        last_event = e.id;
      }
    }
    bool counts_changed =
        update.sweep().counts().SerializeAsString() != last_counts.SerializeAsString();
    if (first || counts_changed || update.runs_size() > 0 || update.events_size() > 0) {
      if (!writer->Write(update)) return grpc::Status::OK;  // the client went away
      first = false;
      last_counts = update.sweep().counts();
    }
    if (SweepFinished(FromProto(update.sweep().state()).value_or(SweepState::kQueued))) break;
    if (feed_->closed()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
    version = WaitToPoll(*feed_, *ctx, version, polled);
  }
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::WatchRun(grpc::ServerContext* ctx, const v1::WatchRunRequest* req,
                                         grpc::ServerWriter<v1::RunUpdate>* writer) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  int64_t last_step = -1;
  std::optional<RunFingerprint> told;
  uint64_t version = feed_->version();
  while (!ctx->IsCancelled()) {
    const auto polled = std::chrono::steady_clock::now();
    absl::StatusOr<Run> run = store_->GetRun(req->id());
    if (!run.ok()) return ToGrpc(run.status());
    absl::StatusOr<std::vector<MetricPoint>> points =
        store_->ListMetricPoints(run->id, last_step, 100000);
    if (!points.ok()) return ToGrpc(points.status());
    if (!told || !(*told == Fingerprint(*run)) || !points->empty()) {
      v1::RunUpdate update;
      ToProto(*run, update.mutable_run());
      for (const MetricPoint& p : *points) {
        ToProto(p, update.add_points());
        last_step = p.step;
      }
      told = Fingerprint(*run);
      if (!writer->Write(update)) return grpc::Status::OK;
    }
    if (IsTerminal(run->state)) break;
    if (feed_->closed()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
    version = WaitToPoll(*feed_, *ctx, version, polled);
  }
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::GetMetrics(grpc::ServerContext* ctx,
                                           const v1::GetMetricsRequest* req,
                                           v1::GetMetricsResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  if (req->max_points() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "max_points must be >= 0");
  }
  absl::StatusOr<Run> run = store_->GetRun(req->run_id());
  if (!run.ok()) return ToGrpc(run.status());
  int max_points = req->max_points() == 0 ? 2000 : req->max_points();
  absl::StatusOr<MetricCurve> series = store_->GetMetrics(req->run_id(), max_points);
  if (!series.ok()) return ToGrpc(series.status());
  for (const MetricPoint& p : series->points) ToProto(p, resp->add_points());
  resp->set_total_points(series->total_points);
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest*,
                                            v1::ListWorkersResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  absl::StatusOr<std::vector<Worker>> workers = store_->ListWorkers();
  if (!workers.ok()) return ToGrpc(workers.status());
  std::map<std::string, std::vector<int64_t>> runs;
  if (hooks_.runs_by_worker) runs = hooks_.runs_by_worker();
  std::map<std::string, WorkerAllocation> allocations;
  if (hooks_.worker_allocations) allocations = hooks_.worker_allocations();
  const int64_t now = SystemClock::Get().WallMs();
  for (const Worker& w : *workers) {
    v1::Worker* out = resp->add_workers();
    ToProto(w, out);
    for (int64_t r : runs[w.id]) out->add_run_ids(r);
    if (auto a = allocations.find(w.id); a != allocations.end()) ToProto(a->second, now, out);
  }
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::ListPresets(grpc::ServerContext* ctx, const v1::ListPresetsRequest*,
                                            v1::ListPresetsResponse* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  for (const Preset& p : AllPresets()) {
    v1::Preset* out = resp->add_presets();
    out->set_name(std::string(p.name));
    out->set_record(std::string(p.record));
    out->set_doc(std::string(p.doc));
    out->set_dataset(std::string(p.dataset));
    Result<nlohmann::json> config = PresetConfig(p.name, Scale::kFull);
    if (config.ok()) out->set_config_json(CanonicalJson(*config));
  }
  for (Scale s : {Scale::kFull, Scale::kSmall, Scale::kTiny}) {
    resp->add_scales(std::string(ScaleName(s)));
  }
  return grpc::Status::OK;
}

}  // namespace ablate
