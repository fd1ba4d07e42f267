// Held blocks and settled variants of sequential sweeps; see seed_sequencer.h.
#include "server/dispatch/seed_sequencer.h"

#include <algorithm>
#include <vector>

#include "server/compare/run_outcome.h"
#include "server/stats/sequential_rule.h"

namespace ablate {
namespace {

struct VariantRuns {
  std::string name;
  std::vector<Run> runs;
  std::vector<RunOutcome> outcomes;  // of succeeded runs
};

// Seeds 0 .. n-1 have no unfinished run: the number of finished blocks.
int BlocksDone(const std::vector<Run>& runs, int max_seeds) {
  int done = max_seeds;
  for (const Run& r : runs) {
    if (!IsTerminal(r.state)) done = std::min(done, r.seed);
  }
  return done;
}

std::vector<int64_t> QueuedIds(const VariantRuns& v) {
  std::vector<int64_t> ids;
  for (const Run& r : v.runs) {
    if (r.state == RunState::kQueued) ids.push_back(r.id);
  }
  return ids;
}

}  // namespace

absl::StatusOr<SequencedRuns> SeedSequencer::Sequence(const Sweep& sweep) {
  RunFilter filter;
  filter.sweep_id = sweep.id;
  absl::StatusOr<std::vector<Run>> runs = store_->ListRuns(filter);
  if (!runs.ok()) return runs.status();
  std::map<int64_t, VariantRuns> by_variant;
  for (const Run& r : *runs) {
    VariantRuns& v = by_variant[r.variant_id];
    v.name = r.variant_name;
    if (r.state == RunState::kSucceeded) v.outcomes.push_back(ToOutcome(r));
    v.runs.push_back(r);
  }
  const VariantRuns* baseline = nullptr;
  std::vector<const VariantRuns*> ablations;
  for (const auto& [id, v] : by_variant) {
    if (v.name == "baseline") {
      baseline = &v;
    } else {
      ablations.push_back(&v);
    }
  }
  const int done = BlocksDone(*runs, sweep.seeds);
  std::vector<int64_t> skip;
  if (baseline != nullptr && done >= sweep.seeds_min) {
    const SequentialDesign design{sweep.seeds_min, sweep.seeds,
                                  PerAblationAlpha(static_cast<int>(ablations.size()))};
    bool all_settled = true;
    for (const VariantRuns* a : ablations) {
      const SequentialDecision d = DecideSequential(a->outcomes, baseline->outcomes, design, done);
      all_settled = all_settled && d.settled;
      if (d.settled) {
        for (int64_t id : QueuedIds(*a)) skip.push_back(id);
      }
    }
    if (all_settled) {
      for (int64_t id : QueuedIds(*baseline)) skip.push_back(id);
    }
  }
  SequencedRuns out;
  if (!skip.empty()) {
    absl::StatusOr<int> skipped = store_->SkipQueuedRuns(
        sweep.id, skip,
        "not needed: the verdict was settled after " + std::to_string(done) +
            " seeds (sequential seeds)");
    if (!skipped.ok()) return skipped.status();
    out.skipped = *skipped;
  }
  const std::set<int64_t> skipped_ids(skip.begin(), skip.end());
  for (const Run& r : *runs) {
    if (r.state != RunState::kQueued || skipped_ids.count(r.id)) continue;
    if (baseline == nullptr || r.seed < sweep.seeds_min || r.seed <= done) {
      out.released.insert(r.id);
    } else {
      out.held[r.id] = "sequential seeds: block " + std::to_string(r.seed) +
                       " starts when block " + std::to_string(r.seed - 1) +
                       " has finished and its verdicts are in";
    }
  }
  return out;
}

}  // namespace ablate
