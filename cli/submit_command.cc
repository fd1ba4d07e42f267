// `ablate submit`: a spec checked here for what only the file shows (bad bytes), sent with its
// scripts' files, and the expansion printed.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command_text.h"
#include "cli/commands.h"
#include "cli/decompose_command.h"
#include "cli/script_upload.h"
#include "cli/sweep_text.h"
#include "cli/table.h"
#include "common/message_limits.h"
#include "common/printable_text.h"
#include "common/spec/spec_prescan.h"

namespace ablate {
namespace {

// SubmitSweep, or UploadSweep in chunks when the request is over the coordinator's message limit
// (scripts' files; common/message_limits.h).
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
  if (std::optional<int> done = c.Answer(SubmitRequest(c, req, &resp), resp, "spec " + path)) {
    return *done;
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

}  // namespace ablate
