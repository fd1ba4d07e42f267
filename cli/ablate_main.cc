// ablate: the researcher's client. Submits sweep specs to a coordinator, lists and inspects
// sweeps, runs and workers, watches sweeps live and cancels them.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/decompose_command.h"
#include "cli/verify_record_command.h"
#include "common/cli_path_flag.h"

namespace {

constexpr const char* kFooter = R"(
Exit codes: 0 ok, 1 the watched sweep failed, 2 usage, 3 rejected input (bad spec, invalid
request), 4 not found, 5 coordinator unreachable or token refused, 130 interrupted.
Environment: ABLATE_SERVER (HOST:PORT, default 127.0.0.1:7070), ABLATE_TOKEN_FILE (a file
holding the client token, as --token-file), ABLATE_TOKEN (the client token itself).

Typical session:
  ablate submit examples/demo-tiny.yaml --dry-run   # check a spec, store nothing
  ablate submit examples/demo-tiny.yaml             # store it; prints the sweep id
  ablate watch 1                                     # live progress until it finishes
  ablate runs --sweep 1 --state failed               # what went wrong
  ablate compare 1                                   # which ablation is faster, and is it real
  ablate plan 1 --effect 1%                          # seeds needed to see a 1% change
  ablate --json sweep 1 | jq .variants               # scripts read JSON

The guide: README.md, then docs/ (docs/sweeps.md first); each command's --help names its page.)";

// The guide's page (docs/, in the source tree and in the bundle's share/ablate/docs) that covers
// each command; every command's --help ends with it (tests/cli: none is left without one).
const std::map<std::string, std::string>& GuidePages() {
  static const auto* pages = new std::map<std::string, std::string>{
      {"submit", "sweeps"},   {"sweeps", "sweeps"},     {"sweep", "sweeps"},
      {"runs", "sweeps"},     {"run", "sweeps"},        {"watch", "sweeps"},
      {"cancel", "sweeps"},   {"up", "sweeps"},         {"presets", "sweeps"},
      {"knobs", "sweeps"},    {"workers", "operations"}, {"pools", "pools"},
      {"compare", "compare"}, {"records", "compare"},   {"plan", "compare"},
      {"export", "compare"},  {"import", "records"},    {"verify-record", "records"},
      {"decompose", "decompose"}};
  return *pages;
}

void AddGuideFooters(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({})) {
    auto page = GuidePages().find(sub->get_name());
    if (page == GuidePages().end()) continue;  // the test names the command left out
    std::string footer = sub->get_footer();
    sub->footer(footer + (footer.empty() ? "" : "\n") + "\nGuide: docs/" + page->second + ".md");
  }
}

// Adds a required positional id (a sweep or run) to a subcommand.
void AddId(CLI::App* sub, int64_t* id, const std::string& what) {
  sub->add_option("ID", *id, what + " id")->required()->check(CLI::PositiveNumber);
}

// Every option of every command; CLI11 writes into it while parsing.
struct Args {
  ablate::ClientOptions client;
  std::string spec, state, tag, preset, scale = "full";
  bool dry_run = false;
  int64_t id = 0, sweep_id = 0;
  int limit = 100;
  ablate::UpOptions up;
  CLI::Option* up_python = nullptr;
  CLI::Option* up_http = nullptr;
  std::string metric = "both", format, out_path = "-";
  bool csv = false;
  std::string plan_target, effect, sd;
  ablate::DecomposeOptions decompose;
  std::vector<std::string> pool_action;  // ablate pools ACTION POOL [HOST]
  ablate::ImportOptions import;
  std::vector<int64_t> compare_with;
  ablate::VerifyRecordOptions verify;
};

void AddGlobalOptions(CLI::App& app, Args& a) {
  app.add_option("--server", a.client.server, "coordinator HOST:PORT (or ABLATE_SERVER)");
  app.add_option("--token-file", a.client.token_file,
                 "file holding the client token (or ABLATE_TOKEN_FILE; ABLATE_TOKEN is the "
                 "token itself)");
  app.add_option("--tls-ca", a.client.tls_ca,
                 "PEM CA certificate: use TLS and verify the coordinator (or ABLATE_TLS_CA)");
  app.add_flag("--json", a.client.json, "print JSON instead of tables");
}

// submit, sweeps, sweep, runs, run, watch, cancel.
void AddSweepCommands(CLI::App& app, Args& a) {
  CLI::App* submit = app.add_subcommand(
      "submit", "validate a YAML sweep spec, expand it into runs and store it");
  submit->add_option("SPEC", a.spec, "spec file (YAML), or - for stdin")->required();
  submit->add_flag("--dry-run", a.dry_run, "validate and show the expansion; store nothing");
  ablate::AddDecomposeCommand(&app, &a.decompose, &a.client.json);
  CLI::App* sweeps = app.add_subcommand("sweeps", "list sweeps, newest first");
  sweeps->add_option("--state", a.state, "queued|running|succeeded|failed|cancelled");
  sweeps->add_option("--tag", a.tag, "only sweeps with this tag");
  sweeps->add_option("--limit", a.limit, "at most this many")->capture_default_str();
  CLI::App* sweep = app.add_subcommand("sweep", "show one sweep: settings, counts, variants");
  AddId(sweep, &a.id, "sweep");
  CLI::App* runs = app.add_subcommand("runs", "list runs with their summaries");
  runs->add_option("--sweep", a.sweep_id, "only runs of this sweep");
  runs->add_option("--state", a.state, "queued|assigned|running|succeeded|failed|cancelled");
  CLI::App* run = app.add_subcommand("run", "show one run: summary, attempts, config");
  AddId(run, &a.id, "run");
  CLI::App* watch = app.add_subcommand(
      "watch", "follow a sweep live until it finishes (Ctrl-C stops watching, not the sweep)");
  AddId(watch, &a.id, "sweep");
  CLI::App* cancel = app.add_subcommand(
      "cancel", "cancel a sweep's unfinished runs (trainers get SIGTERM, then SIGKILL)");
  AddId(cancel, &a.id, "sweep");
}

// workers, pools.
void AddClusterCommands(CLI::App& app, Args& a) {
  app.add_subcommand("workers", "list worker nodes, GPUs and heartbeats");
  CLI::App* pools = app.add_subcommand(
      "pools", "the coordinator's pools: Slurm pilot allocations (running or pending with "
               "Slurm's reason, nodes, time left) and ssh hosts (state, worker, last start, "
               "last error); `pools drain|release|resume POOL [HOST]` holds or frees an ssh "
               "pool's hosts");
  pools->add_option("ACTION", a.pool_action,
                    "drain POOL [HOST]: no new runs, its worker stops once idle; release POOL "
                    "[HOST]: its worker stops now, its runs requeued uncharged; resume POOL "
                    "[HOST]: brought up again when runs want it (a bad host is tried again). "
                    "Without HOST: every host of the pool")
      ->expected(0, 3);
}

void AddUpCommand(CLI::App& app, Args& a) {
  ablate::UpOptions& o = a.up;
  CLI::App* up = app.add_subcommand(
      "up", "run a coordinator and a local worker on this machine until Ctrl-C");
  up->add_option("--data-dir", o.data_dir,
                 "database, worker folders and datasets/ (default ~/.local/share/ablate)")
      ->transform(ablate::PathFlag());
  up->add_option("--listen", o.listen, "coordinator HOST:PORT (port 0 picks one)")
      ->capture_default_str();
  up->add_option("--cpu-slots", o.cpu_slots,
                 "concurrent CPU runs on the local worker (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  up->add_flag("--demo", o.demo,
               "also encode the demo dataset (once), submit the example sweep of the five seed "
               "ablations at tiny scale, wait for it, print the results and stop");
  up->add_option("--gpus", o.gpus, "GPUs the local worker uses: all, none or 0,1,...")
      ->capture_default_str();
  up->add_option("--lease-ms", o.lease_ms, "worker lease")->capture_default_str();
  up->add_flag("--allow-scripts", o.allow_scripts,
               "the local worker runs script sweeps (your own train_gpt.py); on by default when "
               "the --python interpreter is found, and an error when it is not");
  a.up_python = up->add_option(
      "--python", o.python,
      "interpreter for script runs (launch: python, torchrun, {python}): a name on $PATH or a "
      "path")->transform(ablate::PathFlag(ablate::PathKind::kProgram))->capture_default_str();
  a.up_http = up->add_option(
      "--http", o.http,
      "dashboard HOST:PORT (port 0 picks one; 'off' for none); when not given and 8080 is "
      "taken, a free port is used")->capture_default_str();
}

// presets, up, knobs: the commands that need no server.
void AddLocalCommands(CLI::App& app, Args& a) {
  CLI::App* presets = app.add_subcommand(
      "presets", "list the record presets, or print one preset's full config (no server needed)");
  presets->add_option("NAME", a.preset, "preset to print");
  presets->add_option("--scale", a.scale, "full|small|tiny")->capture_default_str();
  AddUpCommand(app, a);
  app.add_subcommand(
      "knobs", "list every trainer knob: type, default, range, meaning (no server needed)");
}

// compare, records, plan, export.
void AddAnalysisCommands(CLI::App& app, Args& a) {
  CLI::App* compare = app.add_subcommand(
      "compare", "per-variant statistics vs the baseline: means, 95% CIs, Holm-corrected p");
  AddId(compare, &a.id, "sweep");
  compare->add_option("--metric", a.metric, "time|loss|both")->capture_default_str();
  compare->add_flag("--csv", a.csv, "print CSV (every statistic, for notebooks)");
  compare->add_option("--with", a.compare_with,
                      "imported sweeps (ablate import) to put beside this sweep's variants, each "
                      "compared with its baseline; times only on the hardware they were said to "
                      "run on")
      ->check(CLI::PositiveNumber);
  compare->add_flag("--json", a.client.json, "print JSON");
  CLI::App* records = app.add_subcommand(
      "records", "the speedrun's published records beside this cluster's runs of the presets");
  records->add_flag("--csv", a.csv, "print CSV");
  records->add_flag("--json", a.client.json, "print JSON");
  CLI::App* plan = app.add_subcommand(
      "plan", "seeds per variant needed to detect a change in time to target (80% power), and "
              "the GPU-hours");
  plan->add_option("SWEEP_OR_SPEC", a.plan_target,
                   "a sweep id, or a spec file (its baseline's finished runs give the spread)")
      ->required();
  plan->add_option("--effect", a.effect, "the change to detect, e.g. 1% or 0.01")->required();
  plan->add_option("--sd", a.sd,
                   "run-to-run spread of time to target, e.g. 0.5% (default: from finished runs "
                   "of the same baseline)");
  plan->add_flag("--json", a.client.json, "print JSON");
  CLI::App* export_cmd = app.add_subcommand(
      "export", "every run of a sweep with its summary and full curves (csv or jsonl)");
  AddId(export_cmd, &a.id, "sweep");
  export_cmd->add_option("--format", a.format, "csv (one line per metric point) or jsonl (one "
                                               "object per run, with config and attempts)")
      ->required();
  export_cmd->add_option("--out", a.out_path, "output file, - for stdout")->capture_default_str();
}

// import, verify-record: the records' own logs as data (issue 39).
void AddRecordLogCommands(CLI::App& app, Args& a) {
  CLI::App* imp = app.add_subcommand(
      "import", "store record logs (modded-nanogpt's records/ format) as an imported sweep: "
                "curves, times and scripts beside your runs, marked as run elsewhere");
  imp->add_option("LOG", a.import.logs, "the logs, e.g. records/track_1_short/2025-01-16_X/*.txt")
      ->required();
  imp->add_option("--variant", a.import.variant,
                  "the record they belong to (default: each log's folder name)");
  imp->add_option("--name", a.import.name, "the imported sweep's name (default: imported)");
  imp->add_option("--hardware", a.import.hardware,
                  "what the logs ran on, e.g. \"8x NVIDIA H100 80GB HBM3\": only then are their "
                  "times compared like for like with a sweep of yours on that hardware");
  imp->add_option("--target", a.import.target, "val loss whose first crossing is time to target")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  imp->add_flag("--skip-bad", a.import.skip_bad,
                "store the good logs and name the bad ones (default: a bad log stores none, "
                "since a record's logs are a set)");
  imp->add_flag("--dry-run", a.import.dry_run, "parse and show, store nothing");
  imp->add_flag("--json", a.client.json, "print JSON");
  imp->footer("\nExample:\n  ablate import records/track_1_short/2025-01-16_Sub3Min/*.txt "
              "--hardware \"8x NVIDIA H100 80GB HBM3\"\n  ablate compare 1 --with 2");
  ablate::AddVerifyRecordCommand(&app, &a.verify);
}

// The commands that need no server; nullopt for the others.
std::optional<int> RunLocal(const std::string& name, Args& a) {
  if (name == "presets") return ablate::PresetsCommand(a.client.json, a.preset, a.scale);
  if (name == "knobs") return ablate::KnobsCommand(a.client.json);
  a.verify.json = a.verify.json || a.client.json;
  if (name == "verify-record" && a.verify.previous_sweep.empty()) {
    return ablate::VerifyRecordCommand(a.verify, nullptr);
  }
  if (name != "up") return std::nullopt;
  a.up.http_given = a.up_http->count() > 0;
  a.up.python_given = a.up_python->count() > 0;
  if (a.up.data_dir.empty()) {
    const char* home = std::getenv("HOME");
    a.up.data_dir = std::string(home ? home : ".") + "/.local/share/ablate";
  }
  return ablate::UpCommand(a.up);
}

int RunWithServer(const std::string& name, ablate::Client& c, const Args& a) {
  if (name == "submit") return ablate::SubmitCommand(c, a.spec, a.dry_run);
  if (name == "decompose") return ablate::DecomposeCommand(c, a.decompose);
  if (name == "sweeps") return ablate::SweepsCommand(c, a.state, a.tag, a.limit);
  if (name == "sweep") return ablate::SweepCommand(c, a.id);
  if (name == "runs") return ablate::RunsCommand(c, a.sweep_id, a.state);
  if (name == "run") return ablate::RunCommand(c, a.id);
  if (name == "watch") return ablate::WatchCommand(c, a.id);
  if (name == "cancel") return ablate::CancelCommand(c, a.id);
  if (name == "workers") return ablate::WorkersCommand(c);
  if (name == "pools") return ablate::PoolsCommand(c, a.pool_action);
  if (name == "compare") return ablate::CompareCommand(c, a.id, a.metric, a.csv, a.compare_with);
  if (name == "records") return ablate::RecordsCommand(c, a.csv);
  if (name == "plan") return ablate::PlanCommand(c, a.plan_target, a.effect, a.sd);
  if (name == "export") return ablate::ExportCommand(c, a.id, a.format, a.out_path);
  if (name == "import") return ablate::ImportCommand(c, a.import);
  if (name == "verify-record") return ablate::VerifyRecordCommand(a.verify, &c);
  return ablate::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"ablate: run and compare training ablations on a cluster (NanoGPT speedrun).",
               "ablate"};
  app.footer(kFooter);
  app.require_subcommand(1);
  AddGlobalOptions(app, a);
  AddSweepCommands(app, a);
  AddClusterCommands(app, a);
  AddLocalCommands(app, a);
  AddAnalysisCommands(app, a);
  AddRecordLogCommands(app, a);
  AddGuideFooters(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? ablate::kExitOk : ablate::kExitUsage;
  }
  const std::string name = app.get_subcommands().front()->get_name();
  if (std::optional<int> code = RunLocal(name, a)) return *code;
  std::string error;
  std::unique_ptr<ablate::Client> client = ablate::Client::Create(a.client, &error);
  if (!client) {
    std::cerr << "ablate: " << error << "\n";
    return ablate::kExitUsage;
  }
  return RunWithServer(name, *client, a);
}
