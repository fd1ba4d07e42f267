// Command implementations: one request, then a table or JSON.
#include "cli/commands.h"
#include "cli/decompose_command.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/script_upload.h"
#include "cli/sweep_text.h"
#include "cli/table.h"
#include "server/core/message_limits.h"
#include "server/core/printable_text.h"
#include "server/sweep/spec_prescan.h"
#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"

namespace ablate {

std::string StateName(v1::SweepState s) {
  std::string n = v1::SweepState_Name(s);
  n = n.substr(n.find('_') + 1);
  for (char& ch : n) ch = static_cast<char>(std::tolower(ch));
  return n;
}

std::string StateName(v1::RunState s) {
  std::string n = v1::RunState_Name(s);
  n = n.substr(n.find('_') + 1);
  for (char& ch : n) ch = static_cast<char>(std::tolower(ch));
  return n;
}

namespace {

using nlohmann::json;

template <class Enum>
bool ParseState(const std::string& text, Enum* out, bool (*parse)(const std::string&, Enum*),
                const std::string& prefix) {
  std::string upper;
  for (char ch : text) upper += static_cast<char>(std::toupper(ch));
  return parse(prefix + upper, out);
}

std::string Progress(const v1::RunCounts& c) {
  int done = c.succeeded() + c.failed() + c.cancelled();
  return std::to_string(done) + "/" + std::to_string(c.total());
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// "logit_softcap 15→30, unet_skips true→false" from a variant's diff JSON.
std::string DiffSummary(const std::string& diff_json) {
  json d = json::parse(diff_json, nullptr, false);
  if (!d.is_object() || d.empty()) return "-";
  std::string out;
  for (auto it = d.begin(); it != d.end(); ++it) {
    if (!out.empty()) out += ", ";
    out += it.key() + " " + it.value()["from"].dump() + "→" + it.value()["to"].dump();
  }
  return out;
}

// DiffSummary, and for a script ablation declared `same_work: true`, that declaration.
std::string DiffSummary(const v1::Variant& v) {
  std::string out = DiffSummary(v.diff_json());
  if (v.same_work()) out += " (declared: same work per step)";
  return out;
}

// The last `n` lines of `text`.
std::string LastLines(const std::string& text, int n) {
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int i = 0; i < n && pos != std::string::npos && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

// A script run (issue 14): the snapshot it ran, by hash, and its variant's changes against the
// baseline with the unified diff of a changed script.
void PrintScript(Client& c, const v1::Run& r) {
  json config = json::parse(r.config_json(), nullptr, false);
  if (!config.is_object() || !config.contains("script") || !config["script"].is_object()) return;
  const json& s = config["script"];
  std::cout << "script: " << s.value("path", "") << " (snapshot sha256 " << s.value("snapshot", "")
            << "), launch " << s.value("launch", "") << "\n";
  v1::GetSweepRequest req;
  req.set_id(r.sweep_id());
  v1::Sweep sw;
  if (!c.stub().GetSweep(c.Context().get(), req, &sw).ok()) return;
  for (const v1::Variant& v : sw.variants()) {
    if (v.id() != r.variant_id()) continue;
    std::cout << "diff vs baseline: " << DiffSummary(v) << "\n";
    std::string text = ScriptDiffText(v.diff_json());
    if (!text.empty()) std::cout << text << (text.back() == '\n' ? "" : "\n");
  }
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string OptDouble(bool has, double v, int precision) {
  return has ? FormatDouble(v, precision) : "-";
}

void PrintRuns(const google::protobuf::RepeatedPtrField<v1::Run>& runs) {
  Table t({"RUN", "SWEEP", "VARIANT", "SEED", "STATE", "TRIES", "WORKER", "STEPS", "VAL_LOSS",
           "TIME_TO_TARGET"});
  for (const v1::Run& r : runs) {
    const v1::RunSummary& s = r.summary();
    t.AddRow({std::to_string(r.id()), std::to_string(r.sweep_id()), r.variant_name(),
              std::to_string(r.seed()), StateName(r.state()), std::to_string(r.attempts_used()),
              r.worker_id().empty() ? "-" : r.worker_id(), std::to_string(s.steps()),
              OptDouble(s.has_final_val_loss(), s.final_val_loss(), 4),
              s.has_time_to_target_ms() ? FormatDurationMs(s.time_to_target_ms())
                                        : (s.has_final_val_loss() ? "not reached" : "-")});
  }
  t.Print(std::cout);
}

// SubmitSweep, or UploadSweep in chunks when the request is over the coordinator's message limit
// (scripts' files; server/core/message_limits.h).
grpc::Status SubmitRequest(Client& c, const v1::SubmitSweepRequest& req,
                           v1::SubmitSweepResponse* resp) {
  if (req.ByteSizeLong() + 1024 <= kMaxMessageBytes) {
    return c.stub().SubmitSweep(c.Context().get(), req, resp);
  }
  const std::string bytes = req.SerializeAsString();
  std::unique_ptr<grpc::ClientContext> ctx = c.Context(/*streaming=*/true);
  std::unique_ptr<grpc::ClientWriter<v1::SubmitSweepChunk>> writer =
      c.stub().UploadSweep(ctx.get(), resp);
  v1::SubmitSweepChunk chunk;
  for (size_t at = 0; at < bytes.size(); at += kUploadChunkBytes) {
    chunk.set_data(bytes.substr(at, kUploadChunkBytes));
    if (!writer->Write(chunk)) break;  // refused (Finish says why)
  }
  writer->WritesDone();
  return writer->Finish();
}

}  // namespace

namespace {

// After submit: a warning when the connected workers outside pools cannot ever hold one of the
// sweep's runs (more GPUs than they have, on one node or all together). Such runs stay queued and
// show as unschedulable (server/core/placement.h) until workers that can take them connect.
void WarnIfUnschedulable(Client& c, const v1::Sweep& sw) {
  if (sw.gpus_per_run() == 0 || !sw.pool().empty()) return;
  v1::ListWorkersRequest req;
  v1::ListWorkersResponse resp;
  if (!c.stub().ListWorkers(c.Context().get(), req, &resp).ok()) return;
  int connected = 0, most = 0, all = 0;
  for (const v1::Worker& w : resp.workers()) {
    if (!w.connected() || !w.slurm_pool().empty()) continue;
    ++connected;
    most = std::max(most, w.gpus_size());
    all += w.gpus_size();
  }
  if (connected == 0 || sw.gpus_per_run() <= most || sw.gpus_per_run() <= all) return;
  std::cout << "warning: unschedulable now: each run needs " << sw.gpus_per_run()
            << " GPUs and the connected workers have " << all << " (at most " << most
            << " on one node); the runs wait until workers that can hold them connect"
            << (all == 0 ? " (on CPU workers use gpus_per_run: 0; a torchrun gang: processes: N)"
                         : "")
            << "\n";
}

}  // namespace

int SubmitCommand(Client& c, const std::string& path, bool dry_run) {
  std::string text;
  if (path == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::cerr << "ablate: cannot read spec file " << path << "\n";
      return kExitRejected;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  // The spec travels as a proto3 string, which must be valid UTF-8: bad bytes are reported here,
  // by the coordinator's own checks, with file:line:column (else the call fails without one).
  const std::string file_name = path == "-" ? "<stdin>" : TerminalSafe(path);
  SpecErrors prescan(file_name, text);
  if (!PrescanSpec(text, &prescan)) {
    std::cerr << "ablate: spec " << file_name << " rejected:\n"
              << prescan.ToStatus().message() << "\n";
    return kExitRejected;
  }
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(text);
  req.set_file_name(file_name);
  req.set_dry_run(dry_run);
  AddScriptUploads(text, path == "-" ? "." : std::filesystem::path(path).parent_path().string(),
                   &req);
  // A `decompose:` spec: every variant compiles before anything is stored (issue 29).
  if (!CheckDecomposeRequest(req, "python3")) return kExitRejected;
  v1::SubmitSweepResponse resp;
  grpc::Status s = SubmitRequest(c, req, &resp);
  if (!s.ok()) return c.Fail(s, "spec " + path);
  if (c.json()) {
    std::cout << ToJson(resp) << "\n";
    return kExitOk;
  }
  const v1::Sweep& sw = resp.sweep();
  if (dry_run) {
    std::cout << "dry run: sweep '" << sw.name() << "' is valid and expands to "
              << sw.variants_size() << " variants × " << sw.seeds()
              << " seeds = " << resp.runs_size() << " runs (nothing stored)\n";
  } else {
    std::cout << "submitted sweep " << sw.id() << " '" << sw.name() << "': " << sw.variants_size()
              << " variants × " << sw.seeds() << " seeds = " << resp.runs_size() << " runs\n";
  }
  for (const std::string& note : resp.notes()) std::cout << "note: " << note << "\n";
  Table t({"VARIANT", "HASH", "DIFF VS BASELINE"});
  for (const v1::Variant& v : sw.variants()) {
    t.AddRow({v.name(), v.config_hash().substr(0, 12), DiffSummary(v)});
  }
  t.Print(std::cout);
  PrintRunOrder(sw, std::cout);
  PrintCheckpoints(sw, std::cout);
  WarnIfUnschedulable(c, sw);
  if (!dry_run) std::cout << "watch it with: ablate watch " << sw.id() << "\n";
  return kExitOk;
}

int SweepsCommand(Client& c, const std::string& state, const std::string& tag, int limit) {
  v1::ListSweepsRequest req;
  if (!state.empty()) {
    v1::SweepState st;
    if (!ParseState<v1::SweepState>(state, &st, v1::SweepState_Parse, "SWEEP_")) {
      std::cerr << "ablate: unknown sweep state '" << state
                << "'; expected queued, running, succeeded, failed or cancelled\n";
      return kExitUsage;
    }
    req.set_state(st);
  }
  req.set_tag(tag);
  req.set_limit(limit);
  v1::ListSweepsResponse resp;
  grpc::Status s = c.stub().ListSweeps(c.Context().get(), req, &resp);
  if (!s.ok()) return c.Fail(s, "listing sweeps");
  if (c.json()) {
    std::cout << ToJson(resp) << "\n";
    return kExitOk;
  }
  if (resp.sweeps().empty()) {
    std::cout << "no sweeps yet; submit one with: ablate submit SPEC.yaml\n";
    return kExitOk;
  }
  Table t({"ID", "NAME", "STATE", "DONE", "RUNNING", "QUEUED", "FAILED", "PRESET", "SCALE", "TAGS",
           "CREATED"});
  for (const v1::Sweep& sw : resp.sweeps()) {
    const v1::RunCounts& n = sw.counts();
    t.AddRow({std::to_string(sw.id()), sw.name(), StateName(sw.state()), Progress(n),
              std::to_string(n.running() + n.assigned()), std::to_string(n.queued()),
              std::to_string(n.failed()), sw.baseline_preset().empty() ? "-" : sw.baseline_preset(),
              sw.scale(), sw.tags().empty() ? "-" : Join(sw.tags()),
              FormatTimestampMs(sw.created_ms())});
  }
  t.Print(std::cout);
  return kExitOk;
}

namespace {

// Under `ablate runs --sweep N` with queued runs: why they wait, as `ablate sweep` says it (an
// "unschedulable: ..." reason above all: those runs cannot start on the connected workers).
void PrintWaiting(Client& c, int64_t sweep_id, const v1::ListRunsResponse& runs) {
  bool queued = false;
  for (const v1::Run& r : runs.runs()) queued = queued || r.state() == v1::RUN_QUEUED;
  if (sweep_id <= 0 || !queued) return;
  v1::GetSweepRequest req;
  req.set_id(sweep_id);
  v1::Sweep sw;
  if (!c.stub().GetSweep(c.Context().get(), req, &sw).ok()) return;
  for (const std::string& why : sw.waiting_reasons()) std::cout << "waiting: " << why << "\n";
}

}  // namespace

int SweepCommand(Client& c, int64_t id) {
  v1::GetSweepRequest req;
  req.set_id(id);
  v1::Sweep sw;
  grpc::Status s = c.stub().GetSweep(c.Context().get(), req, &sw);
  if (!s.ok()) return c.Fail(s, "sweep " + std::to_string(id));
  if (c.json()) {
    std::cout << ToJson(sw) << "\n";
    return kExitOk;
  }
  const v1::RunCounts& n = sw.counts();
  std::cout << "sweep " << sw.id() << " '" << sw.name() << "'  " << StateName(sw.state()) << "\n"
            << "  baseline: " << BaselineText(sw) << "\n"
            << "  target val loss " << sw.target_val_loss() << ", " << SeedsText(sw)
            << " per variant, " << sw.gpus_per_run() << " GPUs per run (0 = CPU)\n"
            << "  priority " << sw.priority() << ", max concurrent "
            << (sw.max_concurrent() ? std::to_string(sw.max_concurrent()) : "unlimited")
            << ", max attempts " << sw.max_attempts() << ", tags "
            << (sw.tags().empty() ? "-" : TerminalSafe(Join(sw.tags()))) << "\n"
            << "  runs: " << n.total() << " total, " << n.queued() << " queued, "
            << n.assigned() + n.running() << " running, " << n.succeeded() << " succeeded, "
            << n.failed() << " failed, " << n.cancelled() << " cancelled\n";
  for (const std::string& why : sw.waiting_reasons()) std::cout << "  waiting: " << why << "\n";
  std::cout << "  created " << FormatTimestampMs(sw.created_ms()) << ", finished "
            << FormatTimestampMs(sw.finished_ms()) << "\n\n";
  Table t({"#", "VARIANT", "HASH", "DIFF VS BASELINE"});
  for (const v1::Variant& v : sw.variants()) {
    t.AddRow({std::to_string(v.index()), v.name(), v.config_hash().substr(0, 12), DiffSummary(v)});
  }
  t.Print(std::cout);
  PrintRunOrder(sw, std::cout);
  PrintCheckpoints(sw, std::cout);
  return kExitOk;
}

int RunsCommand(Client& c, int64_t sweep_id, const std::string& state) {
  v1::ListRunsRequest req;
  req.set_sweep_id(sweep_id);
  if (!state.empty()) {
    v1::RunState st;
    if (!ParseState<v1::RunState>(state, &st, v1::RunState_Parse, "RUN_")) {
      std::cerr << "ablate: unknown run state '" << state
                << "'; expected queued, assigned, running, succeeded, failed or cancelled\n";
      return kExitUsage;
    }
    req.set_state(st);
  }
  v1::ListRunsResponse resp;
  grpc::Status s = c.stub().ListRuns(c.Context().get(), req, &resp);
  if (!s.ok()) return c.Fail(s, "listing runs");
  if (c.json()) {
    std::cout << ToJson(resp) << "\n";
    return kExitOk;
  }
  if (resp.runs().empty()) {
    std::cout << "no runs match\n";
    return kExitOk;
  }
  PrintRuns(resp.runs());
  PrintWaiting(c, sweep_id, resp);
  return kExitOk;
}

int RunCommand(Client& c, int64_t id) {
  v1::GetRunRequest req;
  req.set_id(id);
  v1::Run r;
  grpc::Status s = c.stub().GetRun(c.Context().get(), req, &r);
  if (!s.ok()) return c.Fail(s, "run " + std::to_string(id));
  if (c.json()) {
    std::cout << ToJson(r) << "\n";
    return kExitOk;
  }
  const v1::RunSummary& sum = r.summary();
  std::cout << "run " << r.id() << " of sweep " << r.sweep_id() << ": variant '" << r.variant_name()
            << "', seed " << r.seed() << ", " << StateName(r.state()) << "\n"
            << "  steps " << sum.steps() << ", final val loss "
            << OptDouble(sum.has_final_val_loss(), sum.final_val_loss(), 4) << ", time to target "
            << (sum.has_time_to_target_ms() ? FormatDurationMs(sum.time_to_target_ms()) : "-")
            << ", mean step " << OptDouble(sum.has_mean_step_ms(), sum.mean_step_ms(), 1)
            << " ms\n";
  if (!r.error().empty()) std::cout << "  error: " << TerminalSafe(r.error()) << "\n";
  if (!r.attempts().empty()) {
    std::cout << "\n";
    Table t({"ATTEMPT", "WORKER", "SLURM_JOB", "STATE", "RESUMED", "EXIT", "STARTED", "FINISHED",
             "ERROR"});
    for (const v1::Attempt& a : r.attempts()) {
      std::string job = a.slurm_job_id() ? std::to_string(a.slurm_job_id()) : "-";
      if (!a.slurm_step_id().empty()) job += "." + a.slurm_step_id();
      std::string resumed =
          a.has_resumed_from_step() ? "step " + std::to_string(a.resumed_from_step()) : "-";
      t.AddRow({std::to_string(a.number()), a.worker_id(), job, a.state(), resumed,
                std::to_string(a.exit_code()),
                FormatTimestampMs(a.started_ms()), FormatTimestampMs(a.finished_ms()),
                a.error().empty() ? "-" : a.error()});
    }
    t.Print(std::cout);
    const std::string& tail = r.attempts(r.attempts_size() - 1).stderr_tail();
    if (!tail.empty()) {
      std::cout << "\nstderr of the last attempt (tail):\n";
      std::string last = LastLines(tail, 40);
      if (!last.empty() && last.back() == '\n') last.pop_back();
      for (size_t at = 0; at <= last.size();) {  // control characters escaped, line by line
        size_t end = std::min(last.find('\n', at), last.size());
        std::cout << TerminalSafe(std::string_view(last).substr(at, end - at)) << "\n";
        at = end + 1;
      }
    }
  }
  std::cout << "\nconfig: " << r.config_json() << "\n";
  PrintScript(c, r);
  return kExitOk;
}

std::atomic<bool> g_interrupted{false};

int WatchCommand(Client& c, int64_t id) {
  g_interrupted = false;
  auto ctx = c.Context(/*streaming=*/true);
  grpc::ClientContext* raw = ctx.get();
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_interrupted = true; };
  sigaction(SIGINT, &sa, nullptr);
  std::atomic<bool> done{false};
  std::thread canceller([&] {
    while (!done) {
      if (g_interrupted) {
        raw->TryCancel();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  v1::WatchSweepRequest req;
  req.set_id(id);
  auto reader = c.stub().WatchSweep(raw, req);
  v1::SweepUpdate u;
  v1::SweepState last = v1::SWEEP_STATE_UNSPECIFIED;
  std::string last_line;
  while (reader->Read(&u)) {
    last = u.sweep().state();
    if (c.json()) {
      std::cout << ToJson(u) << std::endl;
      continue;
    }
    const v1::RunCounts& n = u.sweep().counts();
    std::ostringstream line;
    line << "sweep " << id << " " << StateName(last) << ": " << Progress(n) << " done, "
         << n.running() + n.assigned() << " running, " << n.queued() << " queued, " << n.failed()
         << " failed";
    if (line.str() != last_line) {  // run lines below say what changed; counts only when moved
      last_line = line.str();
      std::cout << "[" << FormatTimestampMs(NowMs()) << "] " << last_line << "\n";
    }
    for (const v1::Run& r : u.runs()) {
      std::cout << "  run " << r.id() << " " << r.variant_name() << " seed " << r.seed() << ": "
                << StateName(r.state());
      if (r.summary().has_final_val_loss()) {
        std::cout << ", val loss " << FormatDouble(r.summary().final_val_loss(), 4);
      }
      std::cout << "\n";
    }
    std::cout.flush();
  }
  grpc::Status s = reader->Finish();
  done = true;
  canceller.join();
  signal(SIGINT, SIG_DFL);
  if (g_interrupted) {
    std::cerr << "ablate: stopped watching (the sweep goes on)\n";
    return kExitInterrupted;
  }
  if (!s.ok()) return c.Fail(s, "watching sweep " + std::to_string(id));
  return last == v1::SWEEP_SUCCEEDED ? kExitOk : kExitFailure;
}

int CancelCommand(Client& c, int64_t id) {
  v1::CancelSweepRequest req;
  req.set_id(id);
  v1::Sweep sw;
  grpc::Status s = c.stub().CancelSweep(c.Context().get(), req, &sw);
  if (!s.ok()) return c.Fail(s, "cancel of sweep " + std::to_string(id));
  if (c.json()) {
    std::cout << ToJson(sw) << "\n";
    return kExitOk;
  }
  std::cout << "cancelled sweep " << sw.id() << " '" << sw.name()
            << "': " << sw.counts().cancelled() << " runs cancelled, " << sw.counts().succeeded()
            << " had already succeeded\n";
  return kExitOk;
}

namespace {

// A Slurm pilot's allocation: "pool h100, job 12, 1h05m left"; "-" outside Slurm.
std::string Allocation(const v1::Worker& w) {
  if (w.slurm_job_id() == 0) {
    return w.slurm_allocation().empty() ? "-" : "slurm " + w.slurm_allocation();
  }
  std::string out = w.slurm_pool().empty() ? "" : "pool " + w.slurm_pool() + ", ";
  out += "job " + std::to_string(w.slurm_job_id());
  if (w.slurm_time_left_s() >= 0) {
    out += ", " + FormatDurationMs(double(w.slurm_time_left_s()) * 1000) + " left";
  }
  return out;
}

}  // namespace

int WorkersCommand(Client& c) {
  v1::ListWorkersRequest req;
  v1::ListWorkersResponse resp;
  grpc::Status s = c.stub().ListWorkers(c.Context().get(), req, &resp);
  if (!s.ok()) return c.Fail(s, "listing workers");
  if (c.json()) {
    std::cout << ToJson(resp) << "\n";
    return kExitOk;
  }
  if (resp.workers().empty()) {
    std::cout << "no workers registered; start one with: ablate-worker --coordinator " << c.server()
              << "\n";
    return kExitOk;
  }
  int64_t now = NowMs();
  Table t({"WORKER", "HOST", "GPUS", "CPU_SLOTS", "STATE", "ALLOCATION", "HEARTBEAT", "RUNS",
           "DATASETS"});
  for (const v1::Worker& w : resp.workers()) {
    std::string gpus = std::to_string(w.gpus_size());
    if (!w.gpus().empty()) gpus += "× " + w.gpus(0).model();
    std::string runs;
    for (int64_t r : w.run_ids()) runs += (runs.empty() ? "" : ",") + std::to_string(r);
    std::string state = w.connected() ? "connected" : "gone";
    if (w.draining()) state += ", draining";
    t.AddRow({w.id(), w.host(), gpus, std::to_string(w.cpu_slots()), state, Allocation(w),
              FormatAgeMs(w.last_heartbeat_ms() ? now - w.last_heartbeat_ms() : -1),
              runs.empty() ? "-" : runs, w.datasets().empty() ? "-" : Join(w.datasets())});
  }
  t.Print(std::cout);
  return kExitOk;
}

int PresetsCommand(bool as_json, const std::string& name, const std::string& scale_name) {
  Result<Scale> scale = ParseScale(scale_name);
  if (!scale.ok()) {
    std::cerr << "ablate: " << scale.error().message << "\n";
    return kExitUsage;
  }
  if (!name.empty()) {
    Result<json> config = PresetConfig(name, *scale);
    if (!config.ok()) {
      std::cerr << "ablate: " << config.error().message << "\n";
      return kExitNotFound;
    }
    std::cout << (as_json ? config->dump() : config->dump(2)) << "\n";
    return kExitOk;
  }
  json all = json::array();
  Table t({"PRESET", "RECORD", "DATASET", "WHAT IT ADDS"});
  for (const Preset& p : AllPresets()) {
    all.push_back({{"name", p.name},
                   {"record", p.record},
                   {"doc", p.doc},
                   {"dataset", p.dataset},
                   {"config", *PresetConfig(p.name, *scale)}});
    t.AddRow(
        {std::string(p.name), std::string(p.record), std::string(p.dataset), std::string(p.doc)});
  }
  if (as_json) {
    std::cout << all.dump() << "\n";
  } else {
    t.Print(std::cout);
    std::cout << "\nscales: full, small, tiny. Show one: ablate presets r20-sub3min --scale tiny\n";
  }
  return kExitOk;
}

int KnobsCommand(bool as_json) {
  json all = json::array();
  Table t({"KNOB", "TYPE", "DEFAULT", "RANGE", "MEANING"});
  for (const KnobSpec& k : AllKnobs()) {
    std::string range;
    if (k.type == KnobType::kChoice) {
      for (std::string_view ch : k.choices) range += (range.empty() ? "" : "|") + std::string(ch);
    } else if (k.type != KnobType::kBool) {
      range = "[" + json(k.min).dump() + ", " + json(k.max).dump() + "]";
    }
    all.push_back({{"name", k.name},
                   {"type", KnobTypeName(k.type)},
                   {"default", k.default_value},
                   {"doc", k.doc}});
    t.AddRow({std::string(k.name), std::string(KnobTypeName(k.type)), k.default_value.dump(),
              range.empty() ? "-" : range, std::string(k.doc)});
  }
  if (as_json) {
    std::cout << all.dump() << "\n";
  } else {
    t.Print(std::cout);
  }
  return kExitOk;
}

}  // namespace ablate
