// Parameter table. q, k and v (or the merged qkv slices) are adjacent, so the forward runs one
// (3d, d) product either way.
#include "trainer/model/param_layout.h"

#include <cstdlib>

namespace ablate {

std::string_view ParamGroupName(ParamGroup g) {
  switch (g) {
    case ParamGroup::kMuon: return "muon";
    case ParamGroup::kAdamEmbed: return "adam_embed";
    case ParamGroup::kAdamHead: return "adam_head";
    case ParamGroup::kAdamScalar: return "adam_scalar";
  }
  return "?";
}

ParamLayout::ParamLayout(const ModelConfig& m) {
  int64_t d = m.model_dim;
  Add("embed.weight", {m.embed_vocab_size, d},
      m.tie_embeddings ? ParamGroup::kAdamHead : ParamGroup::kAdamEmbed);
  if (!m.tie_embeddings) Add("lm_head.weight", {m.vocab_size, d}, ParamGroup::kAdamHead);
  for (int64_t k = 0; k < m.value_embeds; ++k) {
    Add("value_embeds." + std::to_string(k) + ".weight", {m.embed_vocab_size, d},
        ParamGroup::kAdamEmbed);
  }
  if (m.unet_skips) Add("skip_weights", {m.n_layer / 2}, ParamGroup::kAdamScalar);
  for (int64_t i = 0; i < m.n_layer; ++i) AddBlock(m, i);
  MarkStorage(m.storage);
}

void ParamLayout::MarkStorage(const ParamStorage& storage) {
  for (ParamInfo& p : params_) {
    switch (p.group) {
      case ParamGroup::kMuon: p.bf16 = false; break;
      case ParamGroup::kAdamEmbed: p.bf16 = storage.embed_bf16; break;
      case ParamGroup::kAdamHead: p.bf16 = storage.head_bf16; break;
      case ParamGroup::kAdamScalar: p.bf16 = storage.scalar_bf16; break;
    }
  }
}

bool ParamLayout::AnyBf16() const {
  for (const ParamInfo& p : params_) {
    if (p.bf16) return true;
  }
  return false;
}

void ParamLayout::AddBlock(const ModelConfig& m, int64_t i) {
  int64_t d = m.model_dim;
  std::string p = "blocks." + std::to_string(i) + ".";
  if (m.embed_shortcut) Add(p + "lambdas", {2}, ParamGroup::kAdamScalar);
  if (m.HasAttention(i)) {
    if (m.merged_qkv) {
      Add(p + "attn.qkv.weight", {3, d, d}, ParamGroup::kMuon);
    } else {
      for (const char* w : {"q", "k", "v"}) {
        Add(p + "attn." + w + ".weight", {d, d}, ParamGroup::kMuon);
      }
    }
    Add(p + "attn.proj.weight", {d, d}, ParamGroup::kMuon);
    if (m.value_residual) Add(p + "attn.value_lambda", {1}, ParamGroup::kAdamScalar);
    if (m.value_embeds > 0) Add(p + "attn.ve_lambdas", {2}, ParamGroup::kAdamScalar);
  }
  Add(p + "mlp.fc.weight", {m.hidden_dim(), d}, ParamGroup::kMuon);
  Add(p + "mlp.proj.weight", {d, m.hidden_dim()}, ParamGroup::kMuon);
}

void ParamLayout::Add(std::string name, std::vector<int64_t> shape, ParamGroup group) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  params_.push_back({std::move(name), std::move(shape), group, total_, n});
  total_ += n;
}

const ParamInfo* ParamLayout::Find(std::string_view name) const {
  for (const ParamInfo& p : params_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

int64_t ParamLayout::Offset(std::string_view name) const {
  const ParamInfo* p = Find(name);
  if (p == nullptr) std::abort();  // a programming error: callers ask only for present names
  return p->offset;
}

}  // namespace ablate
