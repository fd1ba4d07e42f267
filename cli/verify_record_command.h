// `ablate verify-record LOG... [--previous LOG...|--previous-sweep ID[/VARIANT]]` (issue 39): the
// speedrun's acceptance check over the logs of one claimed record (reference/modded-nanogpt.md
// §7), from the logs alone:
//   - mean final val loss below the target by a one-sided one-sample t-test at p < alpha
//     (scipy.stats.ttest_1samp(losses, 3.28, alternative='less'));
//   - the logs ran one script (their snapshots' hashes) for one number of steps;
//   - the time (final train_time: mean, spread, CI) and, against the previous record's logs, the
//     difference with its 95% CI and Welch's p; the claim must be faster on the same hardware
//     (the GPUs nvidia-smi printed into each log).
// Exit 0 only when every part passes, 1 when the check ran and the claim fails, 3 when a log
// cannot be read (each such file named with its line).
#ifndef ABLATE_CLI_VERIFY_RECORD_COMMAND_H_
#define ABLATE_CLI_VERIFY_RECORD_COMMAND_H_

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/client.h"

namespace ablate {

struct VerifyRecordOptions {
  std::vector<std::string> logs;
  std::vector<std::string> previous;  // the previous record's log files
  std::string previous_sweep;         // or an imported sweep: "ID" or "ID/VARIANT"
  double target = 3.28;
  double alpha = 0.01;
  bool json = false;
};

CLI::App* AddVerifyRecordCommand(CLI::App* app, VerifyRecordOptions* options);

// `client` is needed only for previous_sweep (nullptr otherwise).
int VerifyRecordCommand(const VerifyRecordOptions& options, Client* client);

}  // namespace ablate

#endif  // ABLATE_CLI_VERIFY_RECORD_COMMAND_H_
