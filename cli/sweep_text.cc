// Seeds and dispatch order in words; see sweep_text.h.
#include "cli/sweep_text.h"

#include <cstdint>
#include <utility>

namespace ablate {

std::string SeedsText(const v1::Sweep& sw) {
  if (sw.seeds_min() > 0) {
    return std::to_string(sw.seeds_min()) + " to " + std::to_string(sw.seeds()) +
           " seeds (sequential)";
  }
  return std::to_string(sw.seeds()) + (sw.seeds() == 1 ? " seed" : " seeds");
}

void PrintRunOrder(const v1::Sweep& sw, std::ostream& out) {
  if (sw.dispatch_blocks().empty()) return;
  out << "run order: block k = seed k of every variant, shuffled per block (order seed "
      << sw.order_seed() << "); blocks go out in order\n";
  int shown = 0;
  for (const v1::DispatchBlock& b : sw.dispatch_blocks()) {
    if (shown++ == kMaxBlocksShown) {
      out << "  ... " << sw.dispatch_blocks_size() - kMaxBlocksShown << " more blocks\n";
      break;
    }
    out << "  block " << b.block() << ":";
    for (const std::string& v : b.variants()) out << " " << v;
    out << "\n";
  }
}

namespace {

// ms as the spec writes it: 600000 -> "10m", 90000 -> "90s", 1500 -> "1500ms".
std::string DurationText(int64_t ms) {
  for (auto [unit, size] : {std::pair{"h", int64_t{3600000}}, std::pair{"m", int64_t{60000}},
                            std::pair{"s", int64_t{1000}}}) {
    if (ms % size == 0) return std::to_string(ms / size) + unit;
  }
  return std::to_string(ms) + "ms";
}

}  // namespace

void PrintCheckpoints(const v1::Sweep& sw, std::ostream& out) {
  if (sw.checkpoint_every_ms() <= 0) return;
  out << "checkpoints: every " << DurationText(sw.checkpoint_every_ms())
      << " (wall time), into each worker's --checkpoint-dir (workers without one run without "
         "them); a requeued run resumes from its newest checkpoint\n";
}

}  // namespace ablate
