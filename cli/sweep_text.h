// Text of `ablate sweep` and `ablate submit` about how a sweep's runs go out: its seeds (fixed or
// sequential) and its blocked, shuffled dispatch order (server/core/run_order.h).
#ifndef ABLATE_CLI_SWEEP_TEXT_H_
#define ABLATE_CLI_SWEEP_TEXT_H_

#include <ostream>
#include <string>

#include "ablate/v1/types.pb.h"

namespace ablate {

// What the baseline runs: "r20-sub3min at scale full, dataset fineweb10B" for the built-in
// trainer ("(defaults)" without a preset), or "script train_gpt.py@0123456789ab (launch torchrun,
// args --lr 0.01), dataset none" for a script sweep (from the baseline variant's config, else the
// first variant's).
std::string BaselineText(const v1::Sweep& sw);

// "8 seeds", or "3 to 16 seeds (sequential)".
std::string SeedsText(const v1::Sweep& sw);

// "run order: blocks ..." and one line per block (at most kMaxBlocksShown, then how many more),
// from Sweep.dispatch_blocks; nothing when there are none.
void PrintRunOrder(const v1::Sweep& sw, std::ostream& out);

inline constexpr int kMaxBlocksShown = 4;

// "checkpoints: every 10m ..." when the sweep asks for checkpoints (Sweep.checkpoint_every_ms);
// nothing otherwise.
void PrintCheckpoints(const v1::Sweep& sw, std::ostream& out);

}  // namespace ablate

#endif  // ABLATE_CLI_SWEEP_TEXT_H_
