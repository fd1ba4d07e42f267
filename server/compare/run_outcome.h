// A stored run as the statistics see it (server/stats/variant_stats.h RunOutcome). Used by the
// comparison (compare_queries.h) and by the scheduler's sequential seeds
// (server/dispatch/seed_sequencer.h), which decide on the same numbers.
#ifndef ABLATE_SERVER_COMPARE_RUN_OUTCOME_H_
#define ABLATE_SERVER_COMPARE_RUN_OUTCOME_H_

#include "server/core/model.h"
#include "server/stats/variant_stats.h"

namespace ablate {

// What the statistics need of a stored run: seed and summary (final val loss in nats,
// time to target and mean step time in ms; the time only when the run reached the target).
RunOutcome ToOutcome(const Run& run);

}  // namespace ablate

#endif  // ABLATE_SERVER_COMPARE_RUN_OUTCOME_H_
