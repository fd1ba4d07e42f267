// Wiring of pools into ablate-coordinator (--pools FILE): reading the file, the coordinator's
// id for its pilots' job names, the address pilots dial, and the service hooks.
#ifndef ABLATE_SERVER_POOLS_POOLS_SETUP_H_
#define ABLATE_SERVER_POOLS_POOLS_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/pools/pool_config.h"
#include "server/pools/pool_manager.h"
#include "server/rpc/ablate_service.h"

namespace ablate {

// The pools of `path`; an empty list for "". Errors name the file (and line:column).
absl::StatusOr<std::vector<PoolConfig>> ReadPoolsFile(const std::string& path);

// A stable id for this coordinator's pilot jobs: 8 hex digits of a hash of the host name and
// the absolute data dir, so that the same coordinator restarted finds its pilots again.
std::string DefaultCoordinatorId(const std::string& data_dir);

// HOST:PORT for pilots: `advertise` when given, else the listen host (the host name for a
// wildcard 0.0.0.0 / [::]) with the bound port.
std::string PilotCoordinatorAddress(const std::string& advertise, const std::string& listen,
                                    int bound_port);

// ListPools' view of one pool.
v1::Pool PoolToProto(const PoolStatus& status);

// Hooks for the client service: sweeps are checked against the pools at submit, a submission
// kicks the pools loop too, and waiting reasons include Slurm's. `*manager` may still be null
// when a hook runs (a sweep naming a pool is then refused); it must outlive the service.
void AddPoolHooks(const std::unique_ptr<PoolManager>* manager, bool pools_configured,
                  ServiceHooks* hooks);

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_POOLS_SETUP_H_
