// The launch of a script run (issue 14), shared by the coordinator (which validates specs) and
// the worker (which builds the command line): launch kinds and `command:` placeholders.
#ifndef ABLATE_COMMON_SCRIPT_COMMAND_H_
#define ABLATE_COMMON_SCRIPT_COMMAND_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ablate {

// `launch:` values. python: `<python> <script> args...`; torchrun: `<python> -m
// torch.distributed.run --nproc_per_node G [--nnodes N --node_rank R --master_addr A
// --master_port P] <script> args...`; command: the `command:` template run by /bin/sh -c.
inline constexpr std::string_view kLaunchKinds[] = {"python", "torchrun", "command"};

// The placeholders a `command:` template may use, without braces.
// {args} is the run's `args`, each shell-quoted, separated by spaces (a spec that gives args
// with launch: command must place them with {args}).
inline constexpr std::string_view kCommandPlaceholders[] = {
    "python", "script",  "gpus",     "nnodes", "node_rank", "master_addr",
    "master_port", "seed", "run_dir", "data_dir", "args"};

// The placeholder names `command` uses, in order of appearance; INVALID_ARGUMENT naming the first
// unknown one ("{gpu}") or an unclosed "{". "{{" and "}}" are literal braces.
absl::StatusOr<std::vector<std::string>> CommandPlaceholders(std::string_view command);

// `command` with each placeholder replaced by `values[name]` (a missing value is an error).
absl::StatusOr<std::string> ExpandCommand(std::string_view command,
                                          const std::map<std::string, std::string>& values);

// `arg` quoted for /bin/sh: in single quotes, a ' inside becomes '\'' (the one shell quoting of
// the project: {args} here, the pilots' srun line in server/pools/pilot_job.cc).
std::string ShellQuote(std::string_view arg);

// Environment variable names a spec's `env:` may set: [A-Za-z_][A-Za-z0-9_]*, and none the
// worker sets itself (ABLATE_* and CUDA_VISIBLE_DEVICES). "" when fine, else the problem.
std::string EnvNameProblem(std::string_view name);

}  // namespace ablate

#endif  // ABLATE_COMMON_SCRIPT_COMMAND_H_
