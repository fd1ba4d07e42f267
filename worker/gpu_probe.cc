// GPU discovery through nvidia-smi's CSV output.
#include "worker/gpu_probe.h"

#include <cstdlib>
#include <sstream>

#include "worker/command.h"

namespace ablate::worker {
namespace {

bool ParseInt(const std::string& text, long long& out) {
  std::string t = Trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  out = std::strtoll(t.c_str(), &end, 10);
  return *end == '\0';
}

}  // namespace

std::vector<v1::Gpu> ParseNvidiaSmi(const std::string& csv) {
  std::vector<v1::Gpu> gpus;
  std::stringstream lines(csv);
  for (std::string line; std::getline(lines, line);) {
    size_t a = line.find(','), b = line.rfind(',');
    long long index = 0, memory = 0;
    if (a == std::string::npos || a == b) continue;
    if (!ParseInt(line.substr(0, a), index) || !ParseInt(line.substr(b + 1), memory)) continue;
    v1::Gpu gpu;
    gpu.set_index(int32_t(index));
    gpu.set_model(Trim(line.substr(a + 1, b - a - 1)));
    gpu.set_memory_mb(memory);
    gpus.push_back(gpu);
  }
  return gpus;
}

std::vector<v1::Gpu> ProbeGpus() {
  absl::StatusOr<CommandResult> r =
      RunCommand({"nvidia-smi", "--query-gpu=index,name,memory.total",
                  "--format=csv,noheader,nounits"},
                 std::chrono::seconds(20));
  if (!r.ok() || r->exit_code != 0) return {};
  return ParseNvidiaSmi(r->out);
}

absl::StatusOr<std::vector<v1::Gpu>> SelectGpus(const std::vector<v1::Gpu>& found,
                                                const std::string& spec) {
  if (spec == "all" || spec.empty()) return found;
  if (spec == "none") return std::vector<v1::Gpu>{};
  std::vector<v1::Gpu> kept;
  std::stringstream items(spec);
  for (std::string item; std::getline(items, item, ',');) {
    long long index = 0;
    if (!ParseInt(item, index)) {
      return absl::InvalidArgumentError("--gpus: expected all, none or indices like 0,1; got '" +
                                        spec + "'");
    }
    bool present = false;
    for (const v1::Gpu& g : found) {
      if (g.index() == index) kept.push_back(g), present = true;
    }
    if (!present) {
      return absl::InvalidArgumentError("--gpus: GPU " + std::to_string(index) +
                                        " was not found by nvidia-smi");
    }
  }
  return kept;
}

}  // namespace ablate::worker
