// Training initialisation of the parameters (MODEL.md "Initialisation"). Parity tests load their
// own values instead.
#ifndef ABLATE_TRAINER_MODEL_PARAM_INIT_H_
#define ABLATE_TRAINER_MODEL_PARAM_INIT_H_

#include <cstdint>

#include "trainer/model/model_config.h"
#include "trainer/model/param_layout.h"

namespace ablate {

// Fills data (layout.total()) deterministically from `seed` (same values on every platform).
template <class T>
void InitParams(const ModelConfig& m, const ParamLayout& layout, uint64_t seed, T* data);

}  // namespace ablate

#endif  // ABLATE_TRAINER_MODEL_PARAM_INIT_H_
