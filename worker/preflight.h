// The worker's preflight (issue 25): `ablate-worker --check`, and the same checks logged at every
// worker start. Is this node ready for what the coordinator will send it? One line per check: the
// GPUs, the NVIDIA driver against the CUDA version ablate-train was built with, cuBLASLt and NCCL
// as the trainer would load them, the work and data folders, and the script launchers. Every
// line that is not ok says what to do.
#ifndef ABLATE_WORKER_PREFLIGHT_H_
#define ABLATE_WORKER_PREFLIGHT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/command.h"

namespace ablate::worker {

enum class CheckState {
  kOk,    // usable
  kWarn,  // usable, but some runs will fail or be slow (the line says which)
  kFail,  // runs this worker offers will fail
  kSkip,  // not asked for (--gpus none, scripts not allowed, no CUDA build)
};

struct CheckLine {
  std::string check;  // trainer, gpus, driver, cublaslt, nccl, work-dir, data-dir, python, torchrun
  CheckState state = CheckState::kOk;
  std::string text;   // what was found; for a warning or failure, what is wrong and the fix
};

// Runs a short command and returns its stdout (RunCommand with a timeout); tests inject stand-ins.
using CommandRunner =
    std::function<absl::StatusOr<CommandResult>(const std::vector<std::string>& argv)>;

struct PreflightOptions {
  std::string trainer;        // ablate-train's path; empty when it was not found
  std::string trainer_error;  // why it was not found
  std::string gpus = "all";   // --gpus: all, none or indices
  std::string work_dir;
  std::string data_dir;
  bool allow_scripts = false;
  std::string python = "python3";
  std::string nvidia_smi = "nvidia-smi";  // searched in $PATH when it has no '/'
  uint64_t min_free_bytes = uint64_t{1} << 30;  // less free space than this is a warning
  // False: ablate-train is not asked for --libraries (the trainer line says so, and the driver,
  // cuBLASLt and NCCL lines are skipped); a worker start offering no GPUs sets it.
  bool ask_trainer = true;
  CommandRunner run;                            // default: RunCommand with a 60 s limit
};

// Runs every check, in the order of CheckLine::check above. Never creates folders; the only
// writes are a 4 KiB probe file in the work dir (or its nearest existing parent) and in the data
// dir, removed again. Takes a few seconds at most (ablate-train --libraries maps cuBLASLt).
std::vector<CheckLine> RunPreflight(const PreflightOptions& options);

// "ok    gpus      8 GPUs: ..." one line per check, each ending in '\n'.
std::string PreflightText(const std::vector<CheckLine>& lines);
// {"ok": bool, "checks": [{"check": ..., "state": "ok|warn|fail|skip", "text": ...}, ...]}
std::string PreflightJson(const std::vector<CheckLine>& lines);
// 0 when no check failed, 1 otherwise (warnings do not count).
int PreflightExitCode(const std::vector<CheckLine>& lines);

// The oldest NVIDIA driver that runs programs built with CUDA `cuda_major` (CUDA's minor version
// compatibility: any 13.x runtime runs on 580 and newer). Empty when unknown.
std::string MinimumDriverFor(int cuda_major);
// True when driver version `have` ("550.54.15") is at least `want` ("525.60.13"), compared
// numerically part by part. False when `have` is not a version.
bool DriverAtLeast(const std::string& have, const std::string& want);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_PREFLIGHT_H_
