// `ablate plan` on the server: the seeds a sweep needs to detect a relative change in time to
// target with 80% power, and what they cost (common/plan_power.h does the statistics).
//
// The standard deviation comes from every succeeded run, in any sweep, whose variant has the
// sweep's baseline config (same config hash, seed excluded) and reached the target; at least 2
// are needed unless the request gives sd_relative. Cost: runs x the mean wall time of those runs
// (started to finished) x max(1, gpus_per_run), when such runs exist.
//
// Errors: INVALID_ARGUMENT for an effect outside (0, 1), an sd_relative <= 0, a bad spec (the
// spec's own errors), neither or both of sweep_id and spec_yaml; NOT_FOUND for an unknown sweep;
// FAILED_PRECONDITION when the sweep has no baseline or too few finished runs to estimate the
// spread (the message says to pass --sd).
#ifndef ABLATE_SERVER_COMPARE_PLAN_QUERIES_H_
#define ABLATE_SERVER_COMPARE_PLAN_QUERIES_H_

#include "ablate/v1/client.pb.h"
#include "absl/status/statusor.h"
#include "server/store/store.h"

namespace ablate {

absl::StatusOr<v1::PlanSweepResponse> BuildSweepPlan(const Store& store,
                                                     const v1::PlanSweepRequest& req);

}  // namespace ablate

#endif  // ABLATE_SERVER_COMPARE_PLAN_QUERIES_H_
