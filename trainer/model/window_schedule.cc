// Window schedule. Rounding happens on the block count, as the records' code does it.
#include "trainer/model/window_schedule.h"

#include <algorithm>
#include <cmath>

namespace ablate {

int64_t LongWindowBlocks(const WindowConfig& w, int64_t step, int64_t num_iterations) {
  double x = double(step) / double(num_iterations);
  double blocks = ((1 - x) * w.start_tokens + x * w.end_tokens) / double(w.block_tokens);
  double r = w.rounding == WindowRounding::kCeil ? std::ceil(blocks) : std::floor(blocks);
  return std::max<int64_t>(1, int64_t(r));
}

bool IsLongWindowLayer(int64_t layer, int64_t n_layer) {
  return std::min(layer, n_layer - 1 - layer) % 4 == 0;
}

std::vector<int64_t> LayerWindowBlocks(const ModelConfig& m, int64_t step,
                                       int64_t num_iterations) {
  std::vector<int64_t> out(m.n_layer, 0);
  if (m.window.kind != AttnWindow::kSliding) return out;
  int64_t n_long = LongWindowBlocks(m.window, step, num_iterations);
  for (int64_t i = 0; i < m.n_layer; ++i) {
    bool is_long = !m.window.long_short || IsLongWindowLayer(i, m.n_layer);
    out[i] = is_long ? n_long : std::max<int64_t>(1, n_long / 2);
  }
  return out;
}

}  // namespace ablate
