// The step-work marking of the knobs (knob_table.cc has the knobs themselves); see step_work.h.
#include "trainer/config/step_work.h"

namespace ablate {
namespace {

// Knobs that leave a step's computation alone: optimiser constants and schedules (the same
// kernels with other scalars), initialisation, the attention scale (a multiply either way),
// evaluation settings (validation is not timed) and the seed.
constexpr std::string_view kSameWorkKnobs[] = {
    "linear_init", "zero_init_lm_head", "zero_init_proj", "attn_scale", "rope_base",
    "muon.lr", "muon.momentum", "muon.ns_coeffs", "muon.scale_rule",
    "muon.momentum_warmup_start", "muon.momentum_warmup_end", "muon.momentum_warmup_steps",
    "adam.embed_lr", "adam.head_lr", "adam.scalar_lr", "adam.beta1", "adam.beta2", "adam.eps",
    "num_iterations", "warmup_iters", "warmdown_iters", "cooldown_frac", "lr_floor",
    "val_tokens", "val_every", "target_val_loss", "seed"};

}  // namespace

StepWork StepWorkOf(std::string_view knob) {
  for (std::string_view same : kSameWorkKnobs) {
    if (knob == same) return StepWork::kSame;
  }
  return knob == "logit_softcap" ? StepWork::kSameUnlessZero : StepWork::kChanges;
}

bool ChangesStepWork(std::string_view knob, const nlohmann::json& from,
                     const nlohmann::json& to) {
  switch (StepWorkOf(knob)) {
    case StepWork::kSame:
      return false;
    case StepWork::kSameUnlessZero:
      return !from.is_number() || !to.is_number() ||
             (from.get<double>() == 0.0) != (to.get<double>() == 0.0);
    case StepWork::kChanges:
      break;
  }
  return true;
}

}  // namespace ablate
