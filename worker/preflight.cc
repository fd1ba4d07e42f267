// The preflight's order, its folder and launcher checks, and its two output forms; the GPU checks
// are in preflight_gpu.cc.
#include "worker/preflight.h"

#include <sys/statvfs.h>

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "worker/datasets.h"
#include "worker/disk_space.h"
#include "worker/preflight_internal.h"

namespace ablate::worker {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

constexpr uint64_t kTooLittle = uint64_t{100} << 20;  // below this a folder fails the check
constexpr size_t kReportLimit = 1 << 16;  // ablate-train's --libraries line is a few hundred bytes

std::string GiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(uint64_t{1} << 30));
  return buf;
}

// The trainer line, and its --libraries report (null when there is none).
J TrainerReport(const PreflightOptions& o, std::vector<CheckLine>& out) {
  if (o.trainer.empty()) {
    out.push_back({"trainer", CheckState::kFail,
                   o.trainer_error + ": build it (cmake --build build --target ablate-train), "
                                     "or pass --trainer PATH"});
    return nullptr;
  }
  if (!o.ask_trainer) {
    out.push_back({"trainer", CheckState::kOk, o.trainer + " (its CUDA libraries not asked: no GPUs)"});
    return nullptr;
  }
  absl::StatusOr<CommandResult> r = o.run({o.trainer, "--libraries"});
  J report = r.ok() && r->exit_code == 0 && r->out.size() < kReportLimit
                 ? J::parse(r->out, nullptr, /*allow_exceptions=*/false)
                 : J();
  if (!report.is_object() || !report.value("backends", J()).is_array()) {
    out.push_back({"trainer", CheckState::kFail,
                   o.trainer + " does not answer --libraries (" +
                       (r.ok() ? "exit " + std::to_string(r->exit_code)
                               : std::string(r.status().message())) +
                       "): it is not a working ablate-train of this version; rebuild it, or pass "
                       "--trainer PATH"});
    return nullptr;
  }
  std::string backends;
  for (const J& b : report["backends"]) {
    backends += (backends.empty() ? "" : ", ") + (b.is_string() ? b.get<std::string>() : "?");
  }
  const J& cuda = report.value("cuda", J());
  out.push_back({"trainer", CheckState::kOk,
                 o.trainer + " (backends: " + backends +
                     (cuda.is_object() ? "; built with CUDA " + cuda.value("built", "?") : "") +
                     ")"});
  return report;
}

// The nearest folder at or above `path` that exists.
std::string ExistingAncestor(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  while (!p.empty() && !fs::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
  return p.string();
}

// Writable (a probe file really written) and its free space, for the work dir.
CheckLine WorkDirLine(const PreflightOptions& o) {
  std::string dir = ExistingAncestor(o.work_dir);
  std::string where = dir == fs::absolute(o.work_dir).string()
                          ? o.work_dir
                          : o.work_dir + " (does not exist yet; made in " + dir + ")";
  if (absl::Status s = ProbeSpace(dir, 4096); !s.ok()) {
    return {"work-dir", CheckState::kFail,
            where + ": cannot write there (" + std::string(s.message()) +
                "): pass a --work-dir this user can write to, on a local disk with space"};
  }
  struct statvfs st {};
  uint64_t free = ::statvfs(dir.c_str(), &st) == 0 ? uint64_t(st.f_bavail) * st.f_frsize : 0;
  std::string text = where + ": writable, " + GiB(free) + " free";
  if (free < kTooLittle) {
    return {"work-dir", CheckState::kFail,
            text + ": too little for run folders and the outbox; free some space or pass "
                   "another --work-dir"};
  }
  if (free < o.min_free_bytes) {
    return {"work-dir", CheckState::kWarn,
            text + ": long runs may fill it (run logs, the outbox, checkpoints); free some space "
                   "or pass another --work-dir"};
  }
  return {"work-dir", CheckState::kOk, text};
}

CheckLine DataDirLine(const PreflightOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.data_dir, ec)) {
    return {"data-dir", CheckState::kWarn,
            o.data_dir + " does not exist, so this worker has no datasets and gets no runs: "
                         "create it and fetch one (ablate-data fetch ... --out " +
                o.data_dir + "/NAME) or pass --data-dir"};
  }
  std::vector<std::string> valid, broken;
  for (const DatasetCheck& c : CheckDatasets(o.data_dir)) {
    (c.problem.empty() ? valid : broken).push_back(c.problem.empty() ? c.name
                                                                     : c.name + ": " + c.problem);
  }
  struct statvfs st {};
  uint64_t free = ::statvfs(o.data_dir.c_str(), &st) == 0 ? uint64_t(st.f_bavail) * st.f_frsize : 0;
  bool writable = ProbeSpace(o.data_dir, 4096).ok();
  std::string names;
  for (const std::string& n : valid) names += (names.empty() ? "" : ", ") + n;
  std::string text = o.data_dir + ": " + std::to_string(valid.size()) + " dataset(s)" +
                     (names.empty() ? "" : " (" + names + ")") + ", " +
                     (writable ? GiB(free) + " free" : "read-only");
  for (const std::string& b : broken) text += "; not offered: " + b;
  if (valid.empty()) {
    return {"data-dir", CheckState::kWarn,
            text + ": no runs can be sent here until a dataset is there (ablate-data fetch or "
                   "ablate-data encode into " + o.data_dir + "/NAME)"};
  }
  if (!broken.empty()) return {"data-dir", CheckState::kWarn, text + " (ablate-data verify NAME)"};
  return {"data-dir", CheckState::kOk, text};
}

// The interpreter that script runs use, and PyTorch for launch: torchrun (python -m
// torch.distributed.run). PyTorch's version is read from its metadata, not imported (seconds).
void LauncherLines(const PreflightOptions& o, std::vector<CheckLine>& out) {
  if (!o.allow_scripts) {
    out.push_back({"python", CheckState::kSkip, "script runs not allowed (no --allow-scripts)"});
    out.push_back({"torchrun", CheckState::kSkip, "script runs not allowed (no --allow-scripts)"});
    return;
  }
  constexpr const char* kProbe =
      "import sys\ntry:\n import importlib.metadata as m\n t = m.version('torch')\n"
      "except Exception:\n t = ''\nprint(sys.version.split()[0])\nprint(t)\n";
  absl::StatusOr<CommandResult> r = o.run({o.python, "-c", kProbe});
  if (!r.ok() || r->exit_code != 0) {
    std::string why = r.ok() ? "exits " + std::to_string(r->exit_code) : "was not found";
    out.push_back({"python", CheckState::kFail,
                   o.python + " " + why + ": install Python 3, or pass --python PATH (a "
                                          "virtual environment's bin/python)"});
    out.push_back({"torchrun", CheckState::kSkip, "no python"});
    return;
  }
  std::string version = Trim(r->out.substr(0, r->out.find('\n')));
  std::string torch = Trim(r->out.find('\n') == std::string::npos
                               ? ""
                               : r->out.substr(r->out.find('\n') + 1));
  out.push_back({"python", CheckState::kOk, o.python + " (Python " + version + ")"});
  if (torch.empty()) {
    out.push_back({"torchrun", CheckState::kWarn,
                   "PyTorch is not installed for " + o.python +
                       ": sweeps with launch: torchrun fail here; install it for that python "
                       "(pip install torch), or pass --python of an environment that has it"});
  } else {
    out.push_back({"torchrun", CheckState::kOk,
                   "PyTorch " + torch + ": launch: torchrun runs " + o.python +
                       " -m torch.distributed.run"});
  }
}

const char* StateName(CheckState s) {
  switch (s) {
    case CheckState::kOk: return "ok";
    case CheckState::kWarn: return "warn";
    case CheckState::kFail: return "fail";
    case CheckState::kSkip: return "skip";
  }
  return "?";
}

}  // namespace

std::vector<CheckLine> RunPreflight(const PreflightOptions& options) {
  PreflightOptions o = options;
  if (!o.run) {
    o.run = [](const std::vector<std::string>& argv) {
      return RunCommand(argv, std::chrono::seconds(60));
    };
  }
  std::vector<CheckLine> out;
  J report = TrainerReport(o, out);
  GpuFacts gpus = ProbeGpuFacts(o, out);
  if (report.is_object()) {
    out.push_back(DriverLine(gpus, report));
    out.push_back(CublasLtLine(gpus, report));
    out.push_back(NcclLine(gpus, report));
  } else {
    for (const char* c : {"driver", "cublaslt", "nccl"}) {
      out.push_back({c, CheckState::kSkip, o.ask_trainer
                                               ? "ablate-train gave no report (see the trainer line)"
                                               : "no GPUs"});
    }
  }
  out.push_back(WorkDirLine(o));
  out.push_back(DataDirLine(o));
  LauncherLines(o, out);
  return out;
}

std::string PreflightText(const std::vector<CheckLine>& lines) {
  std::string text;
  for (const CheckLine& l : lines) {
    char head[32];
    std::snprintf(head, sizeof head, "%-5s %-9s ", StateName(l.state), l.check.c_str());
    text += head + l.text + "\n";
  }
  return text;
}

std::string PreflightJson(const std::vector<CheckLine>& lines) {
  J checks = J::array();
  for (const CheckLine& l : lines) {
    checks.push_back({{"check", l.check}, {"state", StateName(l.state)}, {"text", l.text}});
  }
  return J{{"ok", PreflightExitCode(lines) == 0}, {"checks", checks}}.dump(2) + "\n";
}

int PreflightExitCode(const std::vector<CheckLine>& lines) {
  for (const CheckLine& l : lines) {
    if (l.state == CheckState::kFail) return 1;
  }
  return 0;
}

}  // namespace ablate::worker
