// Client service handlers. Each checks the token, calls the core and translates the result.
#include "server/rpc/ablate_service.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/message_limits.h"
#include "server/convert/convert.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/watch_streams.h"
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

int PageSize(int requested, int fallback) {
  if (requested <= 0) return fallback;
  return requested > kMaxPage ? kMaxPage : requested;
}

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
  std::map<int64_t, std::map<int64_t, ImportedLogInfo>> imported;  // sweep -> run -> log
  for (const Run& r : *runs) {
    v1::Run* out = resp->add_runs();
    ToProto(r, out);
    if (r.worker_id != kImportedWorkerId) continue;
    auto it = imported.find(r.sweep_id);
    if (it == imported.end()) {
      absl::StatusOr<std::map<int64_t, ImportedLogInfo>> logs = store_->ListImportedLogs(r.sweep_id);
      if (!logs.ok()) return ToGrpc(logs.status());
      it = imported.emplace(r.sweep_id, *std::move(logs)).first;
    }
    if (auto log = it->second.find(r.id); log != it->second.end()) {
      ToProto(log->second, out->mutable_imported());
    }
  }
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::GetCodeSnapshot(grpc::ServerContext* ctx,
                                                const v1::GetCodeSnapshotRequest* req,
                                                v1::CodeSnapshot* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  const std::string& hash = req->hash();
  if (hash.size() != 64 || !std::all_of(hash.begin(), hash.end(), [](char ch) {
        return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
      })) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a snapshot hash is 64 lowercase hex digits (a sha256)");
  }
  absl::StatusOr<Snapshot> files = store_->GetSnapshot(hash);
  if (!files.ok()) return ToGrpc(files.status());
  SnapshotToProto(hash, *files, resp);
  return grpc::Status::OK;
}

grpc::Status AblateServiceImpl::GetRun(grpc::ServerContext* ctx, const v1::GetRunRequest* req,
                                       v1::Run* resp) {
  if (grpc::Status s = auth_->CheckClient(*ctx); !s.ok()) return s;
  absl::StatusOr<Run> run = store_->GetRun(req->id());
  if (!run.ok()) return ToGrpc(run.status());
  ToProto(*run, resp);
  if (run->worker_id == kImportedWorkerId) {
    absl::StatusOr<std::map<int64_t, ImportedLogInfo>> logs = store_->ListImportedLogs(run->sweep_id);
    if (!logs.ok()) return ToGrpc(logs.status());
    if (auto it = logs->find(run->id); it != logs->end()) ToProto(it->second, resp->mutable_imported());
  }
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

WatchScheduler* AblateServiceImpl::Scheduler() {
  std::call_once(scheduler_once_, [this] {
    WatchScheduler::Options o;
    o.min_interval = kWatchMinInterval;
    o.tick = kWatchTick;
    o.threads = kWatchThreads;
    scheduler_ = std::make_unique<WatchScheduler>(feed_, o);
  });
  return scheduler_.get();
}

grpc::ServerWriteReactor<v1::SweepUpdate>* AblateServiceImpl::WatchSweep(
    grpc::CallbackServerContext* ctx, const v1::WatchSweepRequest* req) {
  WatchDeps deps{store_, feed_, auth_, watch_cache_.get(), Scheduler(), kWatchMinInterval};
  return NewSweepWatch(deps, ctx, req->id());
}

grpc::ServerWriteReactor<v1::RunUpdate>* AblateServiceImpl::WatchRun(
    grpc::CallbackServerContext* ctx, const v1::WatchRunRequest* req) {
  WatchDeps deps{store_, feed_, auth_, watch_cache_.get(), Scheduler(), kWatchMinInterval};
  return NewRunWatch(deps, ctx, req->id());
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
