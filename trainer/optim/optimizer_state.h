// The optimizers' state as a checkpoint holds it (both backends): Adam's step count and moments,
// Muon's momentum buffers, flat, in the optimizer's own order.
#ifndef ABLATE_TRAINER_OPTIM_OPTIMIZER_STATE_H_
#define ABLATE_TRAINER_OPTIM_OPTIMIZER_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

struct OptimizerState {
  int64_t adam_steps = 0;            // Adam's t: steps taken so far
  std::vector<float> adam_m;         // the Adam spans' first moments, concatenated in span order
  std::vector<float> adam_v;         // second moments, likewise
  std::vector<float> muon_momentum;  // every Muon matrix's buffer (all ranks'), in matrix order
};

// An error naming the part whose size is not the optimizer's (adam_m, adam_v, muon_momentum).
inline Status CheckStateSizes(const OptimizerState& s, int64_t adam, int64_t muon) {
  auto check = [](const char* what, size_t got, int64_t want) -> Status {
    if (int64_t(got) == want) return {};
    return Error{std::string("optimizer state ") + what + " has " + std::to_string(got) +
                     " values, this run's optimizer has " + std::to_string(want),
                 what};
  };
  ABLATE_RETURN_IF_ERROR(check("adam_m", s.adam_m.size(), adam));
  ABLATE_RETURN_IF_ERROR(check("adam_v", s.adam_v.size(), adam));
  return check("muon_momentum", s.muon_momentum.size(), muon);
}

}  // namespace ablate

#endif  // ABLATE_TRAINER_OPTIM_OPTIMIZER_STATE_H_
