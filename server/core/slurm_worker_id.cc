// Parsing of Slurm pilots' worker ids.
#include "server/core/slurm_worker_id.h"

#include <charconv>

namespace ablate {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size() && *out >= 0;
}

}  // namespace

std::string SlurmWorkerRef::allocation() const {
  return cluster + "/" + std::to_string(job_id) + "." + std::to_string(restart_count);
}

std::optional<SlurmWorkerRef> ParseSlurmWorkerId(std::string_view id) {
  constexpr std::string_view kPrefix = "slurm/";
  if (!id.starts_with(kPrefix)) return std::nullopt;
  id.remove_prefix(kPrefix.size());
  size_t slash1 = id.find('/');
  size_t slash2 = id.rfind('/');
  if (slash1 == std::string_view::npos || slash1 == slash2 || slash1 == 0) return std::nullopt;
  SlurmWorkerRef ref;
  ref.cluster = std::string(id.substr(0, slash1));
  std::string_view job = id.substr(slash1 + 1, slash2 - slash1 - 1);
  size_t dot = job.find('.');
  if (dot == std::string_view::npos || !ParseNumber(job.substr(0, dot), &ref.job_id) ||
      !ParseNumber(job.substr(dot + 1), &ref.restart_count) ||
      !ParseNumber(id.substr(slash2 + 1), &ref.node_index)) {
    return std::nullopt;
  }
  return ref;
}

}  // namespace ablate
