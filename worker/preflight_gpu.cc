// The preflight's GPU half: nvidia-smi's GPUs and driver version, and what ablate-train reports
// with --libraries (trainer/tools/library_report.h): the CUDA it was built with, the driver's
// CUDA as the trainer sees it, and where cuBLASLt and NCCL load from.
#include <sstream>

#include <nlohmann/json.hpp>

#include "worker/gpu_probe.h"
#include "worker/preflight.h"
#include "worker/preflight_internal.h"

namespace ablate::worker {
namespace {

using J = nlohmann::json;

// "13.0" -> 13; -1 when not a version.
int Major(const J& version) {
  if (!version.is_string()) return -1;
  const std::string& v = version.get_ref<const std::string&>();
  char* end = nullptr;
  long m = std::strtol(v.c_str(), &end, 10);
  return end == v.c_str() ? -1 : int(m);
}

std::string Describe(const std::vector<v1::Gpu>& gpus) {
  std::string indices, models;
  bool same = true;
  for (const v1::Gpu& g : gpus) {
    indices += (indices.empty() ? "" : ",") + std::to_string(g.index());
    same = same && g.model() == gpus.front().model() && g.memory_mb() == gpus.front().memory_mb();
  }
  std::string n = std::to_string(gpus.size()) + (gpus.size() == 1 ? " GPU" : " GPUs");
  if (same) {
    return n + " (" + indices + "): " + gpus.front().model() + ", " +
           std::to_string(gpus.front().memory_mb()) + " MiB" + (gpus.size() > 1 ? " each" : "");
  }
  for (const v1::Gpu& g : gpus) {
    models += (models.empty() ? "" : "; ") + std::to_string(g.index()) + ": " + g.model() + ", " +
              std::to_string(g.memory_mb()) + " MiB";
  }
  return n + ": " + models;
}

constexpr const char* kPassGpus =
    "on a GPU node, install the NVIDIA driver (it brings nvidia-smi); in a container, start it "
    "with the GPUs passed in (docker run --gpus all, apptainer run --nv; pyxis passes them)";

CheckLine NoGpus(const std::string& spec, const std::string& why) {
  if (spec == "all") {
    return {"gpus", CheckState::kWarn,
            "no GPUs: " + why + "; this worker offers CPU runs only. " + kPassGpus};
  }
  return {"gpus", CheckState::kFail, "--gpus " + spec + " asks for GPUs, but " + why + ": " +
                                         kPassGpus + "; or run with --gpus none"};
}

}  // namespace

std::string MinimumDriverFor(int cuda_major) {
  switch (cuda_major) {
    case 13: return "580";
    case 12: return "525.60.13";
    case 11: return "450.80.02";
    default: return "";
  }
}

bool DriverAtLeast(const std::string& have, const std::string& want) {
  std::stringstream a(have), b(want);
  std::string x, y;
  bool any = false;
  while (std::getline(b, y, '.')) {
    if (!std::getline(a, x, '.')) x = "0";
    char* end = nullptr;
    long hx = std::strtol(x.c_str(), &end, 10);
    if (end == x.c_str()) return false;
    any = true;
    long wy = std::strtol(y.c_str(), nullptr, 10);
    if (hx != wy) return hx > wy;
  }
  return any;
}

GpuFacts ProbeGpuFacts(const PreflightOptions& o, std::vector<CheckLine>& out) {
  GpuFacts facts;
  if (o.gpus == "none") {
    out.push_back({"gpus", CheckState::kSkip, "none asked for (--gpus none): CPU runs only"});
    return facts;
  }
  absl::StatusOr<CommandResult> r = o.run({o.nvidia_smi, "--query-gpu=index,name,memory.total",
                                           "--format=csv,noheader,nounits"});
  if (!r.ok()) {
    out.push_back(NoGpus(o.gpus, o.nvidia_smi + " was not found in $PATH"));
    return facts;
  }
  if (r->exit_code != 0) {
    out.push_back(NoGpus(o.gpus, o.nvidia_smi + " failed (exit " + std::to_string(r->exit_code) +
                                     "; run it to see why: often a driver whose kernel module "
                                     "and library versions differ, fixed by a reboot)"));
    return facts;
  }
  std::vector<v1::Gpu> found = ParseNvidiaSmi(r->out);
  if (found.empty()) {
    out.push_back(NoGpus(o.gpus, o.nvidia_smi + " lists no GPUs"));
    return facts;
  }
  absl::StatusOr<std::vector<v1::Gpu>> chosen = SelectGpus(found, o.gpus);
  if (!chosen.ok()) {
    out.push_back({"gpus", CheckState::kFail,
                   std::string(chosen.status().message()) + " (found: " + Describe(found) + ")"});
    return facts;
  }
  facts.gpus = *chosen;
  out.push_back({"gpus", CheckState::kOk, Describe(facts.gpus)});
  absl::StatusOr<CommandResult> d =
      o.run({o.nvidia_smi, "--query-gpu=driver_version", "--format=csv,noheader"});
  if (d.ok() && d->exit_code == 0) facts.driver = Trim(d->out.substr(0, d->out.find('\n')));
  return facts;
}

CheckLine DriverLine(const GpuFacts& g, const nlohmann::json& report) {
  if (g.gpus.empty()) return {"driver", CheckState::kSkip, "no GPUs to drive"};
  const J& cuda = report.value("cuda", J());
  if (!cuda.is_object()) {
    return {"driver", CheckState::kFail,
            "ablate-train was built without its CUDA backend (nvcc was not found when it was "
            "built), so GPU runs fail: build it on a machine with the CUDA toolkit, or run this "
            "worker with --gpus none"};
  }
  std::string built = cuda.value("built", "?");
  int built_major = Major(cuda.value("built", J()));
  std::string need = MinimumDriverFor(built_major);
  std::string driver = g.driver.empty() ? "(version unknown)" : g.driver;
  std::string upgrade =
      "upgrade the NVIDIA driver to " + need + " or newer (on data-center GPUs, the cuda-compat-" +
      std::to_string(built_major) + " package with its folder on LD_LIBRARY_PATH also works), "
      "or build ablate-train with a CUDA toolkit this driver supports (cmake -S trainer -B "
      "build-trainer on this node)";
  const J& seen = cuda.value("driver", J());
  if (seen.is_string()) {
    std::string dc = seen.get<std::string>();
    if (Major(seen) >= built_major) {
      return {"driver", CheckState::kOk, "NVIDIA driver " + driver + " runs CUDA " + dc +
                                             " programs; ablate-train was built with CUDA " +
                                             built};
    }
    return {"driver", CheckState::kFail,
            "NVIDIA driver " + driver + " runs CUDA programs up to CUDA " + dc +
                ", but ablate-train was built with CUDA " + built + ", which needs driver " +
                need + " or newer: " + upgrade};
  }
  if (!g.driver.empty() && !need.empty() && !DriverAtLeast(g.driver, need)) {
    return {"driver", CheckState::kFail,
            "NVIDIA driver " + g.driver + " is too old for ablate-train, built with CUDA " +
                built + ", which needs driver " + need + " or newer: " + upgrade};
  }
  return {"driver", CheckState::kFail,
          "ablate-train cannot load the NVIDIA driver's libcuda.so.1 (nvidia-smi reports driver " +
              driver + "): in a container, start it with the NVIDIA runtime (docker run --gpus "
              "all, apptainer run --nv); elsewhere add the folder holding libcuda.so.1 to "
              "LD_LIBRARY_PATH or to ldconfig's list"};
}

CheckLine CublasLtLine(const GpuFacts& g, const nlohmann::json& report) {
  const J& lib = report.value("cublaslt", J());
  if (!lib.is_object()) return {"cublaslt", CheckState::kSkip, "ablate-train has no CUDA backend"};
  bool found = lib.value("found", false);
  if (g.gpus.empty()) {
    return {"cublaslt", CheckState::kSkip,
            "needed only for GPU runs; " +
                (found ? "found at " + lib.value("path", "?") : std::string("not found"))};
  }
  if (found) return {"cublaslt", CheckState::kOk, lib.value("path", "?")};
  return {"cublaslt", CheckState::kFail,
          lib.value("error", "not found") +
              " (it comes with the CUDA toolkit, or pip's nvidia-cublas package; a folder on "
              "LD_LIBRARY_PATH must hold it)"};
}

CheckLine NcclLine(const GpuFacts& g, const nlohmann::json& report) {
  const J& lib = report.value("nccl", J());
  bool found = lib.is_object() && lib.value("found", false);
  std::string where = found ? "NCCL " + lib.value("version", "?") + " at " + lib.value("path", "?")
                            : std::string("not found");
  if (g.gpus.size() < 2) {
    return {"nccl", CheckState::kSkip, "needed only for runs on several GPUs; " + where};
  }
  if (!report.value("cuda", J()).is_object()) {
    return {"nccl", CheckState::kSkip, "ablate-train has no CUDA backend"};
  }
  if (!lib.is_object()) {
    return {"nccl", CheckState::kWarn,
            "ablate-train was built without NCCL (nccl.h was not found when it was built), so "
            "runs on several GPUs are refused: rebuild it where NCCL's headers are (libnccl-dev)"};
  }
  if (found) return {"nccl", CheckState::kOk, where};
  return {"nccl", CheckState::kFail,
          lib.value("error", "not found") +
              " (runs on several GPUs fail; single-GPU runs are unaffected)"};
}

}  // namespace ablate::worker
