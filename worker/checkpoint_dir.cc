// Checkpoint folders of runs on the worker's --checkpoint-dir.
#include "worker/checkpoint_dir.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace ablate::worker {
namespace fs = std::filesystem;

std::string RunCheckpointDir(const std::string& root, int64_t run_id) {
  return (fs::path(root) / ("run-" + std::to_string(run_id))).string();
}

std::optional<int64_t> CheckpointStep(const std::string& name) {
  constexpr std::string_view kPrefix = "ckpt-", kSuffix = ".safetensors";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 18 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

std::string CheckpointEveryArg(int64_t every_ms) {
  if (every_ms % 1000 == 0) return std::to_string(every_ms / 1000) + "s";
  char text[32];
  std::snprintf(text, sizeof text, "%.3fs", double(every_ms) / 1000.0);
  return text;
}

namespace {

// A temporary file of an interrupted write: "ckpt-<steps>.safetensors.tmp.<pid>".
bool IsLeftover(const std::string& name) {
  size_t tmp = name.find(".safetensors.tmp.");
  return name.starts_with("ckpt-") && tmp != std::string::npos;
}

}  // namespace

absl::StatusOr<CheckpointPlan> PlanCheckpoints(const std::string& dir, int64_t every_ms,
                                               int64_t resume_max_step) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create checkpoint folder " + dir + ": " + ec.message());
  CheckpointPlan plan;
  std::vector<fs::path> doomed;
  fs::directory_iterator it(dir, ec);
  if (ec) return absl::InternalError("cannot list checkpoint folder " + dir + ": " + ec.message());
  for (const fs::directory_entry& e : it) {
    const std::string name = e.path().filename().string();
    if (IsLeftover(name)) {
      doomed.push_back(e.path());
      plan.removed.push_back(name + " (an interrupted write)");
    } else if (std::optional<int64_t> step = CheckpointStep(name)) {
      if (*step > resume_max_step) {
        doomed.push_back(e.path());
        plan.removed.push_back(name + " (ahead of the stored curve, which ends at step " +
                               std::to_string(resume_max_step) + ")");
      } else if (!plan.newest || *step > *plan.newest) {
        plan.newest = step;
      }
    }
  }
  for (const fs::path& p : doomed) fs::remove(p, ec);  // best effort: another node may race
  plan.trainer_args = {"--checkpoint-dir", dir, "--checkpoint-every", CheckpointEveryArg(every_ms)};
  if (plan.newest) {
    plan.trainer_args.push_back("--resume");
    plan.trainer_args.push_back(dir);
  }
  return plan;
}

}  // namespace ablate::worker
