// The decomposition table of `ablate compare` (issue 29): for a sweep expanded from `decompose:`
// (common/decompose/decompose_spec.h), each change's add-one-in and leave-one-out effect on time to
// target, steps to target and ms/step, and whether the parts add up (server/stats/decomposition.h
// has the statistics). The variants say which changes they carry in their diff_json
// ("script": {"decompose": {"changes": [...], "all": [...], "roles": [...]}}); FROM is the
// baseline.
#ifndef ABLATE_SERVER_COMPARE_COMPARE_DECOMPOSITION_H_
#define ABLATE_SERVER_COMPARE_COMPARE_DECOMPOSITION_H_

#include <span>
#include <vector>

#include "ablate/v1/client.pb.h"
#include "server/core/model.h"
#include "server/stats/variant_stats.h"

namespace ablate {

// One variant of a sweep and the outcomes of its succeeded runs (as the comparison counts them).
struct VariantOutcomes {
  const Variant* variant;
  std::span<const RunOutcome> outcomes;
};

// Sets out->decomposition when `baseline` exists and `ablations` are a decomposition's (some
// carry the decompose key): every change with its add-one-in and leave-one-out variants. Leaves
// `out` alone for any other sweep, or when the variants do not make a whole decomposition (a
// change without its add-one-in variant).
void FillDecomposition(const VariantOutcomes* baseline, std::span<const VariantOutcomes> ablations,
                       v1::CompareSweepResponse* out);

}  // namespace ablate

#endif  // ABLATE_SERVER_COMPARE_COMPARE_DECOMPOSITION_H_
