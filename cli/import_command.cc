// `ablate import LOG...` (issue 39): record logs sent to the coordinator (ImportLogs), which
// parses them and stores an imported sweep. The CLI only reads the files and names variants.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/table.h"
#include "common/message_limits.h"
#include "common/record_log.h"

namespace ablate {
namespace {

// A record's name from its folder: records/track_1_short/2025-01-16_Sub3Min/x.txt ->
// "2025-01-16_Sub3Min"; characters outside [A-Za-z0-9._-] become '-'.
std::string FolderVariant(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  std::string name = ec ? "" : abs.parent_path().filename().string();
  std::string out;
  for (char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    out += ok ? ch : '-';
  }
  if (out.size() > 64) out.resize(64);
  return out.empty() || out == "." || out == ".." ? "record" : out;
}

grpc::Status Send(Client& c, const v1::ImportLogsRequest& req, v1::ImportLogsResponse* resp) {
  const std::string bytes = req.SerializeAsString();
  std::unique_ptr<grpc::ClientContext> ctx = c.Context(/*streaming=*/true);
  std::unique_ptr<grpc::ClientWriter<v1::SubmitSweepChunk>> writer =
      c.stub().ImportLogs(ctx.get(), resp);
  v1::SubmitSweepChunk chunk;
  for (size_t at = 0; at < bytes.size(); at += kUploadChunkBytes) {
    chunk.set_data(bytes.substr(at, kUploadChunkBytes));
    if (!writer->Write(chunk)) break;  // refused (Finish says why)
  }
  writer->WritesDone();
  return writer->Finish();
}

std::string Seconds(double ms) { return FormatDouble(ms / 1000.0, 3); }

void PrintImport(const ImportOptions& o, const v1::ImportLogsResponse& r) {
  const v1::Sweep& sw = r.sweep();
  std::cout << (o.dry_run ? "dry run, nothing stored: " : "imported sweep " + std::to_string(sw.id()) + " ")
            << "'" << sw.name() << "': " << r.runs_size() << " logs as runs ran elsewhere; hardware "
            << (sw.imported_hardware().empty()
                    ? "not said (their times are never compared with this cluster's; give "
                      "--hardware when you know it)"
                    : "'" + sw.imported_hardware() + "' (as you said)")
            << "\n";
  Table t({"RUN", "VARIANT", "LOG", "STEPS", "FINAL VAL LOSS", "TRAIN TIME (s)", "MS/STEP",
           "TIME TO " + FormatDouble(sw.target_val_loss(), 4) + " (s)", "GPUS IN THE LOG"});
  for (const v1::Run& run : r.runs()) {
    const v1::RunSummary& s = run.summary();
    t.AddRow({run.id() ? std::to_string(run.id()) : "-", run.variant_name(),
              run.imported().file_name(), std::to_string(s.steps()),
              FormatDouble(s.final_val_loss(), 4), Seconds(s.train_time_ms()),
              FormatDouble(s.mean_step_ms(), 2),
              s.reached_target() ? Seconds(s.time_to_target_ms()) : "never",
              run.imported().logged_hardware().empty() ? "-" : run.imported().logged_hardware()});
  }
  t.Print(std::cout);
  if (r.skipped_size() > 0) {
    std::cout << "\nleft out (--skip-bad), nothing of these stored:\n";
    for (const std::string& s : r.skipped()) std::cout << "  " << s << "\n";
  }
  if (!o.dry_run) {
    std::cout << "\nnext: ablate verify-record NEW_LOG... --previous-sweep " << sw.id()
              << "    ablate compare YOUR_SWEEP --with " << sw.id() << "\n";
  }
}

}  // namespace

int ImportCommand(Client& c, const ImportOptions& o) {
  v1::ImportLogsRequest req;
  req.set_name(o.name);
  req.set_hardware(o.hardware);
  req.set_target_val_loss(o.target);
  req.set_skip_bad(o.skip_bad);
  req.set_dry_run(o.dry_run);
  size_t total = 0;
  for (const std::string& path : o.logs) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec || !std::filesystem::is_regular_file(path, ec)) {
      std::cerr << "ablate import: " << path << ": no such file\n";
      return kExitRejected;
    }
    if (static_cast<int64_t>(size) > kMaxRecordLogBytes) {
      std::cerr << "ablate import: " << path << ": " << size << " bytes, more than the "
                << (kMaxRecordLogBytes >> 20) << " MiB a record log may hold\n";
      return kExitRejected;
    }
    total += size;
    if (total > kMaxUploadBytes) {
      std::cerr << "ablate import: the logs are over " << (kMaxUploadBytes >> 20)
                << " MiB together; import them in several calls\n";
      return kExitRejected;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    v1::ImportFile* f = req.add_files();
    f->set_name(path);
    f->set_content(bytes.str());
    f->set_variant(o.variant.empty() ? FolderVariant(path) : o.variant);
  }
  v1::ImportLogsResponse resp;
  const grpc::Status st = Send(c, req, &resp);
  if (!st.ok()) return c.Fail(st, "importing");
  if (c.json()) {
    std::cout << ToJson(resp) << "\n";
  } else {
    PrintImport(o, resp);
  }
  return kExitOk;
}

}  // namespace ablate
