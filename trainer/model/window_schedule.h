// Attention window sizes per layer and step (MODEL.md "Window size per step").
#ifndef ABLATE_TRAINER_MODEL_WINDOW_SCHEDULE_H_
#define ABLATE_TRAINER_MODEL_WINDOW_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "trainer/model/model_config.h"

namespace ablate {

// n_long = max(1, R(lerp(start, end, step/N) / block)) in blocks. REQUIRES: sliding window.
int64_t LongWindowBlocks(const WindowConfig& w, int64_t step, int64_t num_iterations);

// Whether layer i takes the long window under long_short_windows: encoder i < L/2 is long iff
// i % 4 == 0, decoder layers mirror the encoder (layer i takes the kind of layer L−1−i).
bool IsLongWindowLayer(int64_t layer, int64_t n_layer);

// Window in blocks for every layer at `step`; 0 means no window (full causal attention).
std::vector<int64_t> LayerWindowBlocks(const ModelConfig& m, int64_t step,
                                       int64_t num_iterations);

}  // namespace ablate

#endif  // ABLATE_TRAINER_MODEL_WINDOW_SCHEDULE_H_
