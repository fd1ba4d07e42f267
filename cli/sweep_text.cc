// Seeds and dispatch order in words; see sweep_text.h.
#include "cli/sweep_text.h"

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

}  // namespace ablate
