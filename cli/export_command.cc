// `ablate export SWEEP --format csv|jsonl [--out F]`: every run of a sweep with its summary and
// full curve, for notebooks (ExportSweep).
//   jsonl  one JSON object per run: ids, variant, seed, state, summary, config (with the seed),
//          attempts (resumed_from_step: the checkpoint an attempt went on from) and every metric
//          point of the run's curve (across resumed attempts, each step once); unknown values
//          are null.
//   csv    one file, one line per metric point with the run's columns repeated on each line; a
//          run without points has one line with empty point columns. Configs and attempts are
//          only in jsonl.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command_text.h"
#include "cli/commands.h"
#include "cli/csv.h"

namespace ablate {
namespace {

using nlohmann::json;

template <class T>
json OrNull(bool has, T value) {
  return has ? json(value) : json(nullptr);
}

json SummaryJson(const v1::RunSummary& s) {
  return {{"final_val_loss", OrNull(s.has_final_val_loss(), s.final_val_loss())},
          {"reached_target", s.reached_target()},
          {"time_to_target_ms", OrNull(s.has_time_to_target_ms(), s.time_to_target_ms())},
          {"target_step", OrNull(s.has_target_step(), s.target_step())},
          {"steps", s.steps()},
          {"mean_step_ms", OrNull(s.has_mean_step_ms(), s.mean_step_ms())},
          {"train_time_ms", OrNull(s.has_train_time_ms(), s.train_time_ms())}};
}

json PointJson(const v1::MetricPoint& p) {
  return {{"step", p.step()},
          {"train_loss", OrNull(p.has_train_loss(), p.train_loss())},
          {"val_loss", OrNull(p.has_val_loss(), p.val_loss())},
          {"lr", OrNull(p.has_lr(), p.lr())},
          {"step_ms", OrNull(p.has_step_ms(), p.step_ms())},
          {"train_time_ms", OrNull(p.has_train_time_ms(), p.train_time_ms())},
          {"tokens", OrNull(p.has_tokens(), p.tokens())}};
}

json AttemptJson(const v1::Attempt& a) {
  return {
      {"number", a.number()},          {"worker_id", a.worker_id()}, {"state", a.state()},
      {"exit_code", a.exit_code()},    {"error", a.error()},         {"started_ms", a.started_ms()},
      {"finished_ms", a.finished_ms()},
      {"resumed_from_step", OrNull(a.has_resumed_from_step(), a.resumed_from_step())}};
}

json RunJson(const v1::ExportedRun& e) {
  const v1::Run& r = e.run();
  json config = json::parse(r.config_json(), nullptr, false);
  json out = {{"run_id", r.id()},
              {"sweep_id", r.sweep_id()},
              {"variant_id", r.variant_id()},
              {"variant", r.variant_name()},
              {"seed", r.seed()},
              {"state", StateName(r.state())},
              {"attempts_used", r.attempts_used()},
              {"error", r.error()},
              {"summary", SummaryJson(r.summary())},
              {"config", config.is_discarded() ? json(nullptr) : config},
              // A run imported from a record log (ablate import) ran elsewhere: its log.
              {"imported", r.has_imported()
                               ? json{{"file_name", r.imported().file_name()},
                                      {"log_sha256", r.imported().log_sha256()},
                                      {"logged_hardware", r.imported().logged_hardware()},
                                      {"script_hash", r.imported().script_hash()},
                                      {"total_steps", r.imported().total_steps()},
                                      {"timed_from_step", r.imported().timed_from_step()}}
                               : json(nullptr)},
              {"attempts", json::array()},
              {"points", json::array()}};
  for (const v1::Attempt& a : r.attempts()) out["attempts"].push_back(AttemptJson(a));
  for (const v1::MetricPoint& p : e.points()) out["points"].push_back(PointJson(p));
  return out;
}

constexpr const char* kExportCsvHeader =
    "run_id,sweep_id,variant_id,variant,seed,state,final_val_loss,reached_target,"
    "time_to_target_ms,target_step,steps,mean_step_ms,total_train_time_ms,"
    "step,train_loss,val_loss,lr,step_ms,train_time_ms,tokens\n";

std::vector<std::string> RunCells(const v1::Run& r) {
  const v1::RunSummary& s = r.summary();
  return {std::to_string(r.id()),
          std::to_string(r.sweep_id()),
          std::to_string(r.variant_id()),
          CsvText(r.variant_name()),
          std::to_string(r.seed()),
          StateName(r.state()),
          CsvNumber(s.has_final_val_loss(), s.final_val_loss()),
          s.reached_target() ? "true" : "false",
          CsvNumber(s.has_time_to_target_ms(), s.time_to_target_ms()),
          s.has_target_step() ? std::to_string(s.target_step()) : "",
          std::to_string(s.steps()),
          CsvNumber(s.has_mean_step_ms(), s.mean_step_ms()),
          CsvNumber(s.has_train_time_ms(), s.train_time_ms())};
}

std::vector<std::string> PointCells(const v1::MetricPoint& p) {
  return {std::to_string(p.step()),
          CsvNumber(p.has_train_loss(), p.train_loss()),
          CsvNumber(p.has_val_loss(), p.val_loss()),
          CsvNumber(p.has_lr(), p.lr()),
          CsvNumber(p.has_step_ms(), p.step_ms()),
          CsvNumber(p.has_train_time_ms(), p.train_time_ms()),
          p.has_tokens() ? std::to_string(p.tokens()) : ""};
}

void WriteCsvRun(const v1::ExportedRun& e, std::ostream& out) {
  const std::vector<std::string> run = RunCells(e.run());
  if (e.points().empty()) {
    std::vector<std::string> cells = run;
    cells.resize(run.size() + PointCells(v1::MetricPoint()).size());
    out << CsvLine(cells);
  }
  for (const v1::MetricPoint& p : e.points()) {
    std::vector<std::string> cells = run;
    const std::vector<std::string> point = PointCells(p);
    cells.insert(cells.end(), point.begin(), point.end());
    out << CsvLine(cells);
  }
}

// Streams the sweep's runs into `out`; returns the call's status.
grpc::Status Export(Client& c, int64_t sweep_id, bool csv, std::ostream& out) {
  v1::ExportSweepRequest req;
  req.set_id(sweep_id);
  std::unique_ptr<grpc::ClientContext> ctx = c.Context(/*streaming=*/true);
  auto reader = c.stub().ExportSweep(ctx.get(), req);
  bool header = !csv;  // the CSV header goes out with the first run, or at the end
  v1::ExportedRun run;
  while (reader->Read(&run)) {
    if (!header) out << kExportCsvHeader;
    header = true;
    if (csv) {
      WriteCsvRun(run, out);
    } else {
      out << RunJson(run).dump() << "\n";
    }
  }
  grpc::Status status = reader->Finish();
  if (status.ok() && !header) out << kExportCsvHeader;
  return status;
}

}  // namespace

int ExportCommand(Client& c, int64_t sweep_id, const std::string& format,
                  const std::string& out_path) {
  if (format != "csv" && format != "jsonl") {
    std::cerr << "ablate: unknown --format '" << format << "'; expected csv or jsonl\n";
    return kExitUsage;
  }
  const bool to_stdout = out_path.empty() || out_path == "-";
  std::ofstream file;
  if (!to_stdout) {
    file.open(out_path, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "ablate: cannot write " << out_path << "\n";
      return kExitRejected;
    }
  }
  std::ostream& out = to_stdout ? std::cout : file;
  grpc::Status s = Export(c, sweep_id, format == "csv", out);
  out.flush();
  if (!s.ok()) {
    if (!to_stdout) std::remove(out_path.c_str());  // no half-written file left behind
    return c.Fail(s, "exporting sweep " + std::to_string(sweep_id));
  }
  if (!out) {
    std::cerr << "ablate: writing " << (to_stdout ? "stdout" : out_path) << " failed\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace ablate
