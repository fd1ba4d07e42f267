// Whether a knob changes the work of a training step (what ms/step measures). Variants that
// differ from the baseline only in knobs marked kSame do identical work per step, so their ms/step
// must agree; when they do not, the machine's speed changed during the sweep (the confound check,
// server/stats/confound.h). Conservative: a knob changes the work unless it plainly does not.
#ifndef ABLATE_TRAINER_CONFIG_STEP_WORK_H_
#define ABLATE_TRAINER_CONFIG_STEP_WORK_H_

#include <nlohmann/json.hpp>
#include <string_view>

namespace ablate {

enum class StepWork {
  kChanges,         // shapes, windows, value embeds, skipped layers, merged qkv, activations...
  kSame,            // learning rates, eps, betas, momentum, schedules, init, attention scale...
  kSameUnlessZero,  // a constant whose 0 means "off" (logit_softcap): 0 <-> non-zero changes it
};

// The knob's marking; kChanges for every knob not listed as the same work (and unknown names).
StepWork StepWorkOf(std::string_view knob);

// Whether changing `knob` from `from` to `to` changes the work of a training step.
bool ChangesStepWork(std::string_view knob, const nlohmann::json& from, const nlohmann::json& to);

}  // namespace ablate

#endif  // ABLATE_TRAINER_CONFIG_STEP_WORK_H_
