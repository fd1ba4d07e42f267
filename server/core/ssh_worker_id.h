// Worker ids of an ssh pool's workers: "ssh/<pool>/<host>" (ablate-worker --ssh-host, issue 38),
// and the number that stands for the host where the dispatcher keys a pool's workers by their
// allocation (a Slurm job id for Slurm pools): one host is one allocation, and each start on it
// (its incarnation) is as a Slurm job's restart, so an older start is fenced as a requeued job's
// older incarnation is.
#ifndef ABLATE_SERVER_CORE_SSH_WORKER_ID_H_
#define ABLATE_SERVER_CORE_SSH_WORKER_ID_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace ablate {

inline std::string SshWorkerId(std::string_view pool, std::string_view host) {
  return "ssh/" + std::string(pool) + "/" + std::string(host);
}

// A positive id for `host` within its pool: FNV-1a, 52 bits (the same on every build).
inline int64_t SshAllocationId(std::string_view host) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : host) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h & ((uint64_t{1} << 52) - 1)) + 1;
}

}  // namespace ablate

#endif  // ABLATE_SERVER_CORE_SSH_WORKER_ID_H_
