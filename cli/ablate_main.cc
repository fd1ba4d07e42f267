// ablate: the researcher's client. Submits sweep specs to a coordinator, lists and inspects
// sweeps, runs and workers, watches sweeps live and cancels them.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/decompose_command.h"

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
  ablate --json sweep 1 | jq .variants               # scripts read JSON)";

// Adds a required positional id (a sweep or run) to a subcommand.
void AddId(CLI::App* sub, int64_t* id, const std::string& what) {
  sub->add_option("ID", *id, what + " id")->required()->check(CLI::PositiveNumber);
}

}  // namespace

int main(int argc, char** argv) {
  ablate::ClientOptions opts;
  CLI::App app{"ablate: run and compare training ablations on a cluster (NanoGPT speedrun).",
               "ablate"};
  app.footer(kFooter);
  app.require_subcommand(1);
  app.add_option("--server", opts.server, "coordinator HOST:PORT (or ABLATE_SERVER)");
  app.add_option("--token-file", opts.token_file,
                 "file holding the client token (or ABLATE_TOKEN_FILE; ABLATE_TOKEN is the "
                 "token itself)");
  app.add_option("--tls-ca", opts.tls_ca,
                 "PEM CA certificate: use TLS and verify the coordinator (or ABLATE_TLS_CA)");
  app.add_flag("--json", opts.json, "print JSON instead of tables");

  std::string spec, state, tag, preset, scale = "full";
  bool dry_run = false;
  int64_t id = 0, sweep_id = 0;
  int limit = 100;

  CLI::App* submit = app.add_subcommand(
      "submit", "validate a YAML sweep spec, expand it into runs and store it");
  submit->add_option("SPEC", spec, "spec file (YAML), or - for stdin")->required();
  submit->add_flag("--dry-run", dry_run, "validate and show the expansion; store nothing");
  CLI::App* sweeps = app.add_subcommand("sweeps", "list sweeps, newest first");
  sweeps->add_option("--state", state, "queued|running|succeeded|failed|cancelled");
  sweeps->add_option("--tag", tag, "only sweeps with this tag");
  sweeps->add_option("--limit", limit, "at most this many")->capture_default_str();
  CLI::App* sweep = app.add_subcommand("sweep", "show one sweep: settings, counts, variants");
  AddId(sweep, &id, "sweep");
  CLI::App* runs = app.add_subcommand("runs", "list runs with their summaries");
  runs->add_option("--sweep", sweep_id, "only runs of this sweep");
  runs->add_option("--state", state, "queued|assigned|running|succeeded|failed|cancelled");
  CLI::App* run = app.add_subcommand("run", "show one run: summary, attempts, config");
  AddId(run, &id, "run");
  CLI::App* watch = app.add_subcommand(
      "watch", "follow a sweep live until it finishes (Ctrl-C stops watching, not the sweep)");
  AddId(watch, &id, "sweep");
  CLI::App* cancel = app.add_subcommand(
      "cancel", "cancel a sweep's unfinished runs (trainers get SIGTERM, then SIGKILL)");
  AddId(cancel, &id, "sweep");
  CLI::App* workers = app.add_subcommand("workers", "list worker nodes, GPUs and heartbeats");
  CLI::App* pools = app.add_subcommand(
      "pools", "Slurm pools and their pilot allocations: running or pending (Slurm's reason), "
               "nodes, time left, idle");
  CLI::App* presets = app.add_subcommand(
      "presets", "list the record presets, or print one preset's full config (no server needed)");
  presets->add_option("NAME", preset, "preset to print");
  presets->add_option("--scale", scale, "full|small|tiny")->capture_default_str();
  ablate::UpOptions up_opts;
  CLI::App* up = app.add_subcommand(
      "up", "run a coordinator and a local worker on this machine until Ctrl-C");
  up->add_option("--data-dir", up_opts.data_dir,
                 "database, worker folders and datasets/ (default ~/.local/share/ablate)");
  up->add_option("--listen", up_opts.listen, "coordinator HOST:PORT (port 0 picks one)")
      ->capture_default_str();
  up->add_option("--cpu-slots", up_opts.cpu_slots,
                 "concurrent CPU runs on the local worker (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  up->add_flag("--demo", up_opts.demo,
               "also encode the demo dataset (once), submit the example sweep of the five seed "
               "ablations at tiny scale, wait for it, print the results and stop");
  up->add_option("--gpus", up_opts.gpus, "GPUs the local worker uses: all, none or 0,1,...")
      ->capture_default_str();
  up->add_option("--lease-ms", up_opts.lease_ms, "worker lease")->capture_default_str();
  up->add_flag("--allow-scripts", up_opts.allow_scripts,
               "the local worker runs script sweeps (your own train_gpt.py); on by default when "
               "the --python interpreter is found, and an error when it is not");
  CLI::Option* up_python = up->add_option(
      "--python", up_opts.python,
      "interpreter for script runs (launch: python, torchrun, {python}): a name on $PATH or a "
      "path")->capture_default_str();
  CLI::Option* up_http = up->add_option(
      "--http", up_opts.http,
      "dashboard HOST:PORT (port 0 picks one; 'off' for none); when not given and 8080 is "
      "taken, a free port is used")->capture_default_str();
  CLI::App* knobs = app.add_subcommand(
      "knobs", "list every trainer knob: type, default, range, meaning (no server needed)");
  std::string metric = "both", format, out_path = "-";
  bool csv = false;
  CLI::App* compare = app.add_subcommand(
      "compare", "per-variant statistics vs the baseline: means, 95% CIs, Holm-corrected p");
  AddId(compare, &id, "sweep");
  compare->add_option("--metric", metric, "time|loss|both")->capture_default_str();
  compare->add_flag("--csv", csv, "print CSV (every statistic, for notebooks)");
  compare->add_flag("--json", opts.json, "print JSON");
  CLI::App* records = app.add_subcommand(
      "records", "the speedrun's published records beside this cluster's runs of the presets");
  records->add_flag("--csv", csv, "print CSV");
  records->add_flag("--json", opts.json, "print JSON");
  std::string plan_target, effect, sd;
  CLI::App* plan = app.add_subcommand(
      "plan", "seeds per variant needed to detect a change in time to target (80% power), and "
              "the GPU-hours");
  plan->add_option("SWEEP_OR_SPEC", plan_target,
                   "a sweep id, or a spec file (its baseline's finished runs give the spread)")
      ->required();
  plan->add_option("--effect", effect, "the change to detect, e.g. 1% or 0.01")->required();
  plan->add_option("--sd", sd,
                   "run-to-run spread of time to target, e.g. 0.5% (default: from finished runs "
                   "of the same baseline)");
  plan->add_flag("--json", opts.json, "print JSON");
  CLI::App* export_cmd = app.add_subcommand(
      "export", "every run of a sweep with its summary and full curves (csv or jsonl)");
  AddId(export_cmd, &id, "sweep");
  export_cmd->add_option("--format", format, "csv (one line per metric point) or jsonl (one "
                                             "object per run, with config and attempts)")
      ->required();
  export_cmd->add_option("--out", out_path, "output file, - for stdout")->capture_default_str();

  ablate::DecomposeOptions decompose_opts;
  CLI::App* decompose = ablate::AddDecomposeCommand(&app, &decompose_opts, &opts.json);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? ablate::kExitOk : ablate::kExitUsage;
  }
  if (presets->parsed()) return ablate::PresetsCommand(opts.json, preset, scale);
  if (knobs->parsed()) return ablate::KnobsCommand(opts.json);
  if (up->parsed()) {
    up_opts.http_given = up_http->count() > 0;
    up_opts.python_given = up_python->count() > 0;
    if (up_opts.data_dir.empty()) {
      const char* home = std::getenv("HOME");
      up_opts.data_dir = std::string(home ? home : ".") + "/.local/share/ablate";
    }
    return ablate::UpCommand(up_opts);
  }

  std::string error;
  std::unique_ptr<ablate::Client> client = ablate::Client::Create(opts, &error);
  if (!client) {
    std::cerr << "ablate: " << error << "\n";
    return ablate::kExitUsage;
  }
  ablate::Client& c = *client;
  if (submit->parsed()) return ablate::SubmitCommand(c, spec, dry_run);
  if (decompose->parsed()) return ablate::DecomposeCommand(c, decompose_opts);
  if (sweeps->parsed()) return ablate::SweepsCommand(c, state, tag, limit);
  if (sweep->parsed()) return ablate::SweepCommand(c, id);
  if (runs->parsed()) return ablate::RunsCommand(c, sweep_id, state);
  if (run->parsed()) return ablate::RunCommand(c, id);
  if (watch->parsed()) return ablate::WatchCommand(c, id);
  if (cancel->parsed()) return ablate::CancelCommand(c, id);
  if (workers->parsed()) return ablate::WorkersCommand(c);
  if (pools->parsed()) return ablate::PoolsCommand(c);
  if (compare->parsed()) return ablate::CompareCommand(c, id, metric, csv);
  if (records->parsed()) return ablate::RecordsCommand(c, csv);
  if (plan->parsed()) return ablate::PlanCommand(c, plan_target, effect, sd);
  if (export_cmd->parsed()) return ablate::ExportCommand(c, id, format, out_path);
  return ablate::kExitUsage;
}
