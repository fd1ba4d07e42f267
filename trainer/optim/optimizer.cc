// Group assignment and the config → optimizer conversion.
#include "trainer/optim/optimizer.h"

#include <string>

namespace ablate {
namespace {

using J = nlohmann::json;

std::vector<MuonMatrix> MuonMatrices(const ParamLayout& layout) {
  std::vector<MuonMatrix> out;
  for (const ParamInfo& p : layout.params()) {
    if (p.group != ParamGroup::kMuon) continue;
    int64_t rows = p.shape[p.shape.size() - 2], cols = p.shape.back();
    int64_t slices = p.numel / (rows * cols);  // merged qkv: 3 slices
    for (int64_t s = 0; s < slices; ++s) out.push_back({p.offset + s * rows * cols, rows, cols});
  }
  return out;
}

std::vector<AdamSpan> AdamSpans(const OptimConfig& c, const ParamLayout& layout) {
  std::vector<AdamSpan> out;
  for (const ParamInfo& p : layout.params()) {
    if (p.group != ParamGroup::kMuon) {
      out.push_back({p.offset, p.numel, c.BaseLr(p.group), p.bf16});
    }
  }
  return out;
}

MuonConfig ReadMuon(const J& c) {
  MuonConfig m;
  m.lr = c.at("muon.lr").get<double>();
  m.momentum.momentum = c.at("muon.momentum").get<double>();
  m.momentum.warmup_start = c.at("muon.momentum_warmup_start").get<double>();
  m.momentum.warmup_end = c.at("muon.momentum_warmup_end").get<double>();
  m.momentum.warmup_steps = c.at("muon.momentum_warmup_steps").get<int64_t>();
  m.nesterov = c.at("muon.nesterov").get<bool>();
  m.momentum_form = c.at("muon.momentum_form").get<std::string>() == "lerp" ? MomentumForm::kLerp
                                                                           : MomentumForm::kSum;
  m.ns_steps = c.at("muon.ns_steps").get<int>();
  std::vector<double> k = c.at("muon.ns_coeffs").get<std::vector<double>>();
  m.ns_coeffs = {k.at(0), k.at(1), k.at(2)};
  m.scale_rule = c.at("muon.scale_rule").get<std::string>() == "sqrt_max_dim"
                     ? MuonScaleRule::kSqrtMaxDim
                     : MuonScaleRule::kSqrtMax1Ratio;
  return m;
}

LrSchedule ReadSchedule(const J& c) {
  LrSchedule s;
  s.num_iterations = c.at("num_iterations").get<int64_t>();
  s.warmup_iters = c.at("warmup_iters").get<int64_t>();
  s.warmdown_iters = c.at("warmdown_iters").get<int64_t>();
  s.cooldown_frac = c.at("cooldown_frac").get<double>();
  s.lr_floor = c.at("lr_floor").get<double>();
  return s;
}

}  // namespace

Result<OptimConfig> OptimConfig::FromCanonical(const J& c) {
  OptimConfig o;
  try {
    o.muon = ReadMuon(c);
    o.adam = {c.at("adam.beta1").get<double>(), c.at("adam.beta2").get<double>(),
              c.at("adam.eps").get<double>()};
    o.embed_lr = c.at("adam.embed_lr").get<double>();
    o.head_lr = c.at("adam.head_lr").get<double>();
    o.scalar_lr = c.at("adam.scalar_lr").get<double>();
    o.schedule = ReadSchedule(c);
  } catch (const J::exception& e) {
    return Error{std::string("config is not canonical: ") + e.what(), ""};
  }
  return o;
}

double OptimConfig::BaseLr(ParamGroup group) const {
  switch (group) {
    case ParamGroup::kMuon: return muon.lr;
    case ParamGroup::kAdamEmbed: return embed_lr;
    case ParamGroup::kAdamHead: return head_lr;
    case ParamGroup::kAdamScalar: return scalar_lr;
  }
  return 0;
}

Optimizer::Optimizer(const OptimConfig& config, const ParamLayout& layout, int rank, int world)
    : config_(config), muon_(config.muon, MuonMatrices(layout), rank, world),
      adam_(config.adam, AdamSpans(config, layout)) {}

Status Optimizer::Step(float* params, const float* grads, int64_t step, Communicator& comm) {
  double mult = LrMultiplier(step);
  adam_.Step(params, grads, mult);
  return muon_.Step(params, grads, mult, step, comm);
}

Status Optimizer::GetState(OptimizerState& state, Communicator& comm) const {
  adam_.GetState(state.adam_steps, state.adam_m, state.adam_v);
  return muon_.GetState(state.muon_momentum, comm);
}

Status Optimizer::SetState(const OptimizerState& state) {
  ABLATE_RETURN_IF_ERROR(CheckStateSizes(state, adam_.StateSize(), muon_.StateSize()));
  adam_.SetState(state.adam_steps, state.adam_m, state.adam_v);
  muon_.SetState(state.muon_momentum);
  return {};
}

J Optimizer::GroupTable(const OptimConfig& config, const ParamLayout& layout) {
  J table = J::array();
  for (const ParamInfo& p : layout.params()) {
    table.push_back({{"name", p.name},
                     {"shape", p.shape},
                     {"group", std::string(ParamGroupName(p.group))},
                     {"lr", config.BaseLr(p.group)}});
  }
  return table;
}

}  // namespace ablate
