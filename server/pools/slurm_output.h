// What Slurm's commands print, parsed: squeue's job table (in the format the coordinator asks
// for), sacct's final states, sbatch --parsable's job id, Slurm's time formats, and the comment
// that marks a pilot as this coordinator's. Core logic: text in, values out; the commands are
// run by command_runner.h (ProcessRunner) for pool_manager.h. Unit-tested with outputs recorded
// from Slurm 22.05.
#ifndef ABLATE_SERVER_POOLS_SLURM_OUTPUT_H_
#define ABLATE_SERVER_POOLS_SLURM_OUTPUT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ablate {

// squeue -h -O <kSqueueFormat>: one job per line, fields separated by '|'.
inline constexpr char kSqueueFormat[] =
    "JobID:|,State:|,Reason:|,NumNodes:|,TimeLeft:|,NodeList:|,Name:|,Comment:|,RestartCnt:|,"
    "Partition:";

// The coordinator's one squeue call per poll: its pilots (by job name), in kSqueueFormat.
std::vector<std::string> SqueueArgs(const std::string& job_name);
// The one sacct call for the pilots that left the queue: their allocations' final states.
std::vector<std::string> SacctArgs(const std::vector<int64_t>& job_ids);

struct SlurmJob {
  int64_t id = 0;
  std::string state;   // PENDING, RUNNING, CONFIGURING, COMPLETING, REQUEUED, ...
  std::string reason;  // "None" while running; Resources, Priority, PartitionNodeLimit, ...
  int nodes = 0;
  std::optional<int64_t> time_left_s;  // nullopt: UNLIMITED, NOT_SET or INVALID
  std::string node_list;               // "n[1-2]"; "" while pending
  std::string name;
  std::string comment;  // "" for (null)
  int restart_count = 0;
  std::string partition;

  bool pending() const { return state == "PENDING" || state == "REQUEUED"; }
  // Holding nodes with its payload running (or starting).
  bool running() const { return state == "RUNNING" || state == "CONFIGURING"; }
};

// The jobs of squeue's output. INVALID_ARGUMENT naming the line for anything malformed.
absl::StatusOr<std::vector<SlurmJob>> ParseSqueue(std::string_view text);

// sacct -n -P -X -o JobID,State,ExitCode: job id -> state ("COMPLETED", "CANCELLED",
// "NODE_FAIL", ...; "CANCELLED by 0" is reported as "CANCELLED"). Steps and array jobs are
// skipped.
absl::StatusOr<std::map<int64_t, std::string>> ParseSacct(std::string_view text);
// True when sacct's error output says the cluster keeps no accounting: jobs that left the
// queue are then taken as ended.
bool AccountingDisabled(std::string_view sacct_stderr);

// sbatch --parsable prints "JOBID" or "JOBID;CLUSTER".
absl::StatusOr<int64_t> ParseSbatchJobId(std::string_view text);

// Slurm's time formats ("minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes", "days-hours:minutes:seconds") in seconds. UNLIMITED, NOT_SET and
// INVALID are nullopt (as values; use ParseSlurmTimeSeconds for required values).
std::optional<int64_t> SlurmTimeLeftSeconds(std::string_view text);
absl::StatusOr<int64_t> ParseSlurmTimeSeconds(std::string_view text);
// Seconds in the "days-hours:minutes:seconds" form sbatch --time accepts.
std::string FormatSlurmTime(int64_t seconds);

// A pilot's comment: "ablate coordinator=<id> pool=<name> nodes=<n> sweep=<id>".
struct PilotTag {
  std::string coordinator;
  std::string pool;
  int nodes = 1;
  int64_t sweep_id = 0;  // the sweep whose demand asked for it
};
std::string FormatPilotTag(const PilotTag& tag);
std::optional<PilotTag> ParsePilotTag(std::string_view comment);

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_SLURM_OUTPUT_H_
