// The `ablate` commands, one file each (cli/<name>_command.cc). Each makes its call through
// Client::Call (client.h), prints a table for people (or JSON with --json) and returns an exit code
// from client.h. Text several of them print is command_text.h.
#ifndef ABLATE_CLI_COMMANDS_H_
#define ABLATE_CLI_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/client.h"

namespace ablate {

int SubmitCommand(Client& c, const std::string& spec_path, bool dry_run);
int SweepsCommand(Client& c, const std::string& state, const std::string& tag, int limit);
int SweepCommand(Client& c, int64_t id);
int RunsCommand(Client& c, int64_t sweep_id, const std::string& state);
int RunCommand(Client& c, int64_t id);
// Streams until the sweep finishes (0 if it succeeded, 1 otherwise) or SIGINT (130).
int WatchCommand(Client& c, int64_t id);
int CancelCommand(Client& c, int64_t id);
int WorkersCommand(Client& c);
// `pools`, or `pools drain|release|resume POOL [HOST]` with `action` those words.
int PoolsCommand(Client& c, const std::vector<std::string>& action = {});  // pools_command.cc
// Statistics per variant against the baseline; metric is "time", "loss" or "both"
// (compare_command.cc). Table, or CSV with `csv`, or JSON with --json.
// `with`: imported sweeps (ablate import) put beside the sweep's ablations.
int CompareCommand(Client& c, int64_t sweep_id, const std::string& metric, bool csv,
                   const std::vector<int64_t>& with = {});
// Seeds needed to detect `effect` ("1%") in time to target with 80% power, from a sweep id or a
// spec file; `sd` ("0.5%", optional) replaces the spread of finished runs (plan_command.cc).
int PlanCommand(Client& c, const std::string& sweep_or_spec, const std::string& effect,
                const std::string& sd);
// Published records beside this cluster's runs of the record presets (records_command.cc).
int RecordsCommand(Client& c, bool csv);
// Every run's summary and full curve; format "csv" or "jsonl"; out_path "" or "-" = stdout
// (export_command.cc).
int ExportCommand(Client& c, int64_t sweep_id, const std::string& format,
                  const std::string& out_path);

// `ablate import LOG...` (import_command.cc): record logs stored as an imported sweep.
struct ImportOptions {
  std::vector<std::string> logs;
  std::string variant;   // "" = each log's folder name
  std::string name;      // the sweep's; "" = "imported"
  std::string hardware;  // what the logs ran on, when known
  double target = 3.28;
  bool skip_bad = false;
  bool dry_run = false;
};
int ImportCommand(Client& c, const ImportOptions& options);

struct UpOptions {
  std::string data_dir;              // coordinator DB, worker work dir, datasets/
  std::string listen = "127.0.0.1:7070";
  int cpu_slots = 0;  // 0 = one per core
  bool demo = false;  // submit the demo sweep, wait for it, print results, stop
  std::string gpus = "all";
  int64_t lease_ms = 10000;
  // The dashboard's HOST:PORT ("off": none). When not given and 8080 is taken, the OS picks.
  std::string http = "127.0.0.1:8080";
  bool http_given = false;
  // Script sweeps (README "Your own training script"): the local worker runs them with `python`
  // (a name looked up on $PATH, or a path) whenever that interpreter is found. With
  // allow_scripts (--allow-scripts) or python_given, a missing interpreter is an error instead of
  // a local worker that runs no scripts.
  bool allow_scripts = false;
  std::string python = "python3";
  bool python_given = false;
};
// Runs a coordinator and a local worker until SIGINT/SIGTERM.
int UpCommand(const UpOptions& options);

// Local: the presets and knobs compiled into this binary (no server needed).
int PresetsCommand(bool json, const std::string& name, const std::string& scale);
int KnobsCommand(bool json);

}  // namespace ablate

#endif  // ABLATE_CLI_COMMANDS_H_
