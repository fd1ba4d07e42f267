// `ablate decompose FROM.py TO.py` (issue 29): which of a record's changes made it faster. Splits
// the diff between the two scripts into changes (common/decompose/script_changes.h), checks every
// variant before anything runs (the changes apply, and `python3 -m py_compile` passes), and
// submits the script sweep of FROM, TO, each change added alone to FROM and each removed alone
// from TO (the spec key `decompose:`, expanded by the coordinator through the one script-sweep
// path). The coordinator checks the spec first (a dry run: nothing stored); --dry-run then prints
// the changes, the variants, each change's diff and the runs, and stores nothing. `ablate submit`
// of a spec with `decompose:` runs the same local checks first.
#ifndef ABLATE_CLI_DECOMPOSE_COMMAND_H_
#define ABLATE_CLI_DECOMPOSE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ablate/v1/client.pb.h"
#include "cli/client.h"

namespace ablate {

struct DecomposeOptions {
  std::string from, to;
  std::string spec;                 // base spec (name, seeds, target, baseline launch keys, ...)
  std::vector<std::string> groups;  // NAME=LINES, TO line ranges
  bool dry_run = false;
  std::string effect, sd;           // --dry-run: seeds to detect `effect` at spread `sd`
  std::string python = "python3";   // for py_compile
};

// Adds the `decompose` subcommand to `app`, filling `options` (and `json` for --json).
CLI::App* AddDecomposeCommand(CLI::App* app, DecomposeOptions* options, bool* json);

int DecomposeCommand(Client& c, const DecomposeOptions& options);

// For `ablate submit`: when the request's spec has `decompose:`, compiles every variant (printing
// what does not compile and what to merge) and returns false if any fails; true otherwise.
bool CheckDecomposeRequest(const v1::SubmitSweepRequest& req, const std::string& python);

// The decomposition table of `ablate compare` (decomposition_table.cc).
void PrintDecomposition(const v1::Decomposition& d, std::ostream& out);

}  // namespace ablate

#endif  // ABLATE_CLI_DECOMPOSE_COMMAND_H_
