// Sequential seeds in the scheduler (DESIGN §7, server/stats/sequential_rule.h): which queued
// runs of a sweep with `seeds: {min, max}` may go out now, and which are no longer needed.
//
// Blocks 0 .. min-1 go out as in any sweep. Block b >= min is held until every run of blocks
// 0 .. b-1 has finished (succeeded, failed or cancelled), because the decision to add seed b
// needs their results. When blocks 0 .. n-1 have finished (n >= min), each ablation's stopping
// rule is asked; an ablation whose verdict is settled gets no more seeds: its queued runs are
// cancelled with the reason as their error (Store::SkipQueuedRuns). Once every ablation is
// settled, the baseline's queued runs are cancelled too. A sweep without a baseline has nothing
// to compare with and runs every seed. Only this class writes such cancellations; decisions are
// recomputed from the stored runs each time, so a coordinator restart changes nothing.
//
// Thread-compatible: the dispatcher calls it from its scheduling pass only.
#ifndef ABLATE_SERVER_DISPATCH_SEED_SEQUENCER_H_
#define ABLATE_SERVER_DISPATCH_SEED_SEQUENCER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "server/core/model.h"
#include "server/store/store.h"

namespace ablate {

struct SequencedRuns {
  std::set<int64_t> released;             // queued runs that may be dispatched now
  std::map<int64_t, std::string> held;    // queued runs that wait, with why
  int skipped = 0;                        // runs cancelled by this call as not needed
};

class SeedSequencer {
 public:
  explicit SeedSequencer(Store* store) : store_(store) {}

  // REQUIRES sweep.seeds_min > 0. Errors are the store's.
  absl::StatusOr<SequencedRuns> Sequence(const Sweep& sweep);

 private:
  Store* const store_;
};

}  // namespace ablate

#endif  // ABLATE_SERVER_DISPATCH_SEED_SEQUENCER_H_
