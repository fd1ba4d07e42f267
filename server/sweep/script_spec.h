// The script keys of a sweep spec (issue 14): a baseline or an ablation that runs the
// researcher's own training script instead of the built-in trainer.
//
//   baseline:
//     script: train_gpt.py          # a file or folder, relative to the spec file
//     launch: torchrun              # python (default) | torchrun | command
//     command: "..."                # only with launch: command (placeholders: script_command.h)
//     args: ["--lr", "0.01"]
//     env: {MY_FLAG: "1"}
//     log_format: auto              # auto | modded-nanogpt | ablate-events
//     data_link: data/fineweb10B    # where the script expects the sweep's dataset
//     processes: 2                  # launch: torchrun on a CPU slot (gpus_per_run: 0): a gang of
//                                   # this many processes on one node (gloo); default 1. With
//                                   # GPUs torchrun starts one process per GPU of the run.
//     record: "20"                  # baseline only: reproduces this row of the records table
//   ablations:
//     - {name: my-idea, script: train_gpt_myidea.py}   # any of the keys above but record
//     - {name: lr-2x, args: [--lr, "0.02"], same_work: true}  # same_work (an ablation key,
//       # sweep_keys.h kAblationEntryKeys): it does the baseline's work per step
//
// The files themselves come with the request (ScriptUploads, common/code_snapshot.h): the CLI
// reads them next to the spec; the coordinator never reads the client's file system.
#ifndef ABLATE_SERVER_SWEEP_SCRIPT_SPEC_H_
#define ABLATE_SERVER_SWEEP_SCRIPT_SPEC_H_

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/code_snapshot.h"
#include "common/spec/spec_errors.h"

namespace ablate {

inline constexpr std::string_view kScriptKeys[] = {"script",     "launch",    "command",
                                                   "args",       "env",       "log_format",
                                                   "data_link", "processes"};

// The most processes a CPU torchrun gang (`processes:`) may start on one node.
inline constexpr int kMaxScriptProcesses = 64;

// The script keys one baseline or ablation sets; unset ones inherit (ablations from the
// baseline, the baseline from the defaults).
struct ScriptSettings {
  std::optional<std::string> script;
  std::optional<std::string> launch;
  std::optional<std::string> command;
  std::optional<std::vector<std::string>> args;
  std::optional<std::map<std::string, std::string>> env;
  std::optional<std::string> log_format;
  std::optional<std::string> data_link;
  std::optional<int> processes;
  std::optional<std::string> record;
  SpecPosition at;                             // of the map holding them
  std::map<std::string, SpecPosition> where;   // key -> position of its value
  std::string path;                            // "baseline" or "ablations[2]"
  bool any() const { return !where.empty(); }
};

// Reads the script keys present in `map` (a baseline or ablation entry whose keys were already
// checked against the allowed names), with every value checked: launch and log_format choices,
// placeholders of `command`, env names, relative data_link. `record` only when `baseline`.
ScriptSettings ReadScriptSettings(const YAML::Node& map, const std::string& path, bool baseline,
                                  SpecErrors* errors);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_SCRIPT_SPEC_H_
