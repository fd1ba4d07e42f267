// Record logs into an imported sweep (issue 39), for the gRPC ImportLogs and the dashboard's
// upload alike. The coordinator parses every log itself (common/record_log.h); the client's
// reading is never trusted. By default a call stores all of its logs or none: a record's logs are
// a set, and storing some of them silently changes n, the mean and the record rule's verdict.
// skip_bad stores the good ones and names the others.
#include "server/compare/log_import.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/printable_text.h"
#include "common/record_log.h"
#include "server/convert/convert.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/sha256.h"

namespace ablate {
namespace {


constexpr int kMaxImportFiles = 1000;
constexpr size_t kMaxFileName = 1024;
constexpr size_t kMaxVariantName = 64;
constexpr size_t kMaxHardware = 128;
constexpr size_t kMaxSweepName = 200;
constexpr char kRecordScriptFile[] = "train_gpt.py";

absl::Status Invalid(const std::string& what) { return absl::InvalidArgumentError(what); }

bool IsVariantName(const std::string& v) {
  if (v.empty() || v.size() > kMaxVariantName) return false;
  for (char ch : v) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

// A field that is shown to people: bounded and printable.
absl::Status CheckShown(const std::string& field, const std::string& value, size_t most) {
  if (value.size() > most) {
    return Invalid(absl::StrCat(field, " is ", value.size(), " bytes; at most ", most));
  }
  if (std::optional<std::string> why = UnprintableReason(value)) {
    return Invalid(absl::StrCat(field, ": ", *why));
  }
  return absl::OkStatus();
}

// The log's curve: one point per step (a validation and the train line of its step merge), with
// step_ms the train_time since the previous timed point, per step (worker/script_output.h's
// definition, so imported and own ms/step mean the same).
std::vector<MetricPoint> CurveOf(const RecordLog& log) {
  std::map<int64_t, MetricPoint> by_step;
  for (const RecordLogPoint& p : log.points) {
    MetricPoint& m = by_step[p.step];
    m.step = p.step;
    if (p.val_loss) m.val_loss = p.val_loss;
    if (p.train_loss) m.train_loss = p.train_loss;
    if (p.train_time_ms) m.train_time_ms = p.train_time_ms;
  }
  std::vector<MetricPoint> out;
  std::optional<MetricPoint> last_timed;
  for (auto& [step, m] : by_step) {
    if (m.train_time_ms && last_timed && step > last_timed->step &&
        *m.train_time_ms >= *last_timed->train_time_ms) {
      m.step_ms = (*m.train_time_ms - *last_timed->train_time_ms) /
                  static_cast<double>(step - last_timed->step);
    }
    if (m.train_time_ms) last_timed = m;
    out.push_back(m);
  }
  return out;
}

RunSummary SummaryOf(const RecordLog& log, double target) {
  RunSummary s;
  s.final_val_loss = log.final_val_loss;
  s.steps = log.final_step;
  s.train_time_ms = log.final_train_time_ms;
  s.mean_step_ms = log.mean_step_ms();
  if (std::optional<TargetHit> hit = TimeToTarget(log, target)) {
    s.reached_target = true;
    s.time_to_target_ms = hit->train_time_ms;
    s.target_step = hit->step;
  }
  return s;
}

// What the request asks to store, checked and parsed.
struct ImportPlan {
  Sweep sweep;
  std::vector<Variant> variants;
  std::vector<Store::ImportedRun> runs;
  std::map<std::string, Snapshot> snapshots;
  std::vector<std::string> bad;  // "FILE:LINE: what"
};

absl::Status PlanImport(const v1::ImportLogsRequest& req, ImportPlan* plan) {
  if (req.files().empty()) return Invalid("no log to import");
  if (req.files_size() > kMaxImportFiles) {
    return Invalid(absl::StrCat(req.files_size(), " logs in one import; at most ",
                                kMaxImportFiles));
  }
  const std::string name = req.name().empty() ? "imported" : req.name();
  if (absl::Status s = CheckShown("the sweep name", name, kMaxSweepName); !s.ok()) return s;
  if (absl::Status s = CheckShown("--hardware", req.hardware(), kMaxHardware); !s.ok()) return s;
  const double target = req.target_val_loss() == 0 ? 3.28 : req.target_val_loss();
  if (!(target > 0 && target < 100)) return Invalid("the target val loss must be in (0, 100)");
  std::map<std::string, int> variant_index;
  std::map<int, std::set<std::string>> scripts_of;  // variant index -> script hashes ("" none)
  std::set<std::string> seen;                      // log sha256s
  std::string gpu_hardware;
  for (const v1::ImportFile& f : req.files()) {
    if (absl::Status s = CheckShown("a log's file name", f.name(), kMaxFileName); !s.ok()) return s;
    if (!IsVariantName(f.variant())) {
      return Invalid(absl::StrCat(f.name(), ": variant '", TerminalSafe(f.variant().substr(0, 80)),
                                  "' is not 1 to 64 of [A-Za-z0-9._-]"));
    }
    absl::StatusOr<RecordLog> log = ParseRecordLog(f.content(), f.name(), target);
    const std::string sha = Sha256Hex(f.content());
    if (log.ok() && !seen.insert(sha).second) {
      log = absl::InvalidArgumentError(absl::StrCat(
          f.name(), ": the same bytes as another log of this import (a copy counted twice would "
                    "inflate n)"));
    }
    if (!log.ok()) {
      plan->bad.push_back(TerminalSafe(std::string(log.status().message())));
      continue;
    }
    auto [it, fresh] = variant_index.emplace(f.variant(), static_cast<int>(plan->variants.size()));
    if (fresh) {
      Variant v;
      v.index = it->second;
      v.name = f.variant();
      plan->variants.push_back(v);
    }
    Store::ImportedRun run;
    run.variant_index = it->second;
    run.summary = SummaryOf(*log, target);
    run.points = CurveOf(*log);
    run.log = {f.name(), sha, log->LoggedHardware(), "", log->total_steps, log->timed_from_step};
    if (!log->script.empty()) {
      Snapshot script = {SnapshotFile{kRecordScriptFile, log->script, false}};
      run.log.script_hash = SnapshotHash(script);
      plan->snapshots.emplace(run.log.script_hash, std::move(script));
    }
    scripts_of[run.variant_index].insert(run.log.script_hash);
    if (gpu_hardware.empty()) gpu_hardware = run.log.logged_hardware;
    plan->runs.push_back(std::move(run));
  }
  if (!plan->bad.empty() && !req.skip_bad()) {
    return Invalid(absl::StrCat(plan->bad.size(), " of ", req.files_size(),
                                " logs cannot be imported, so none was stored (a record's logs "
                                "are a set; --skip-bad stores the good ones):\n",
                                absl::StrJoin(plan->bad, "\n")));
  }
  // A variant's config names its script when all its logs ran the same one (`ablate decompose`
  // can start from it).
  std::map<int, int> logs_of;
  for (const Store::ImportedRun& r : plan->runs) ++logs_of[r.variant_index];
  int most = 0;
  for (Variant& v : plan->variants) {
    nlohmann::json config = {{"imported", true}};
    const std::set<std::string>& scripts = scripts_of[v.index];
    if (scripts.size() == 1 && !scripts.begin()->empty()) {
      config["script"] = {{"snapshot", *scripts.begin()}};
    }
    v.config_json = CanonicalJson(config);
    v.config_hash = ConfigHash(config);
    v.diff_json = "{}";
    most = std::max(most, logs_of[v.index]);
  }
  Sweep& s = plan->sweep;
  s.name = name;
  s.imported = true;
  s.imported_hardware = req.hardware();
  s.target_val_loss = target;
  s.seeds = std::max(most, 1);
  s.scale = "full";
  // The first log's GPU count ("8x NVIDIA ..." -> 8); 0 when its nvidia-smi table is absent.
  s.gpus_per_run = gpu_hardware.empty() ? 0 : std::atoi(gpu_hardware.c_str());
  std::vector<std::string> lines = {"# imported from record logs (ablate import)"};
  for (const v1::ImportFile& f : req.files()) {
    lines.push_back(absl::StrCat("# ", f.variant(), ": ", f.name()));
  }
  s.spec_yaml = absl::StrJoin(lines, "\n") + "\n";
  return absl::OkStatus();
}


// The stored sweep as the API shows it: counts, variants and the imported runs with their logs.
absl::Status FillStored(const Store& store, int64_t id, v1::ImportLogsResponse* out) {
  absl::StatusOr<Sweep> sweep = store.GetSweep(id);
  if (!sweep.ok()) return sweep.status();
  ToProto(*sweep, out->mutable_sweep());
  out->mutable_sweep()->set_spec_yaml(sweep->spec_yaml);
  absl::StatusOr<std::map<RunState, int>> counts = store.CountRunsByState(id);
  if (!counts.ok()) return counts.status();
  ToProto(*counts, out->mutable_sweep()->mutable_counts());
  absl::StatusOr<std::vector<Variant>> variants = store.ListVariants(id);
  if (!variants.ok()) return variants.status();
  for (const Variant& v : *variants) ToProto(v, out->mutable_sweep()->add_variants());
  RunFilter filter;
  filter.sweep_id = id;
  absl::StatusOr<std::vector<Run>> runs = store.ListRuns(filter);
  if (!runs.ok()) return runs.status();
  absl::StatusOr<std::map<int64_t, ImportedLogInfo>> logs = store.ListImportedLogs(id);
  if (!logs.ok()) return logs.status();
  for (const Run& r : *runs) {
    v1::Run* run = out->add_runs();
    ToProto(r, run);
    if (auto it = logs->find(r.id); it != logs->end()) ToProto(it->second, run->mutable_imported());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ImportRecordLogs(Store& store, const v1::ImportLogsRequest& req,
                              v1::ImportLogsResponse* resp) {
  ImportPlan plan;
  if (absl::Status s = PlanImport(req, &plan); !s.ok()) return s;
  for (const std::string& b : plan.bad) resp->add_skipped(b);
  if (plan.runs.empty()) {
    return Invalid("no log could be imported:\n" + absl::StrJoin(plan.bad, "\n"));
  }
  if (req.dry_run()) {
    ToProto(plan.sweep, resp->mutable_sweep());
    for (const Store::ImportedRun& r : plan.runs) {
      Run as_run;
      as_run.summary = r.summary;
      as_run.state = RunState::kSucceeded;
      as_run.variant_name = plan.variants[r.variant_index].name;
      as_run.worker_id = kImportedWorkerId;
      v1::Run* out = resp->add_runs();
      ToProto(as_run, out);
      ToProto(r.log, out->mutable_imported());
    }
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> id = store.ImportSweep(plan.sweep, plan.variants, plan.runs,
                                                 plan.snapshots);
  if (!id.ok()) return id.status();
  return FillStored(store, *id, resp);
}

}  // namespace ablate
