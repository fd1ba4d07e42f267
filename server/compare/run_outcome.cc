// Stored run -> RunOutcome; see run_outcome.h.
#include "server/compare/run_outcome.h"

namespace ablate {

RunOutcome ToOutcome(const Run& run) {
  RunOutcome o;
  o.seed = run.seed;
  o.final_val_loss = run.summary.final_val_loss;
  o.reached_target = run.summary.reached_target;
  if (o.reached_target) {
    o.time_to_target_ms = run.summary.time_to_target_ms;
    if (run.summary.target_step) o.steps_to_target = static_cast<double>(*run.summary.target_step);
  }
  o.mean_step_ms = run.summary.mean_step_ms;
  return o;
}

}  // namespace ablate
