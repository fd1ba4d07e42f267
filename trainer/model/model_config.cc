// Canonical JSON → ModelConfig. The config library has already validated ranges and cross-knob
// rules, so this only converts.
#include "trainer/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ablate {
namespace {

using J = nlohmann::json;

cpu::Softcap ReadSoftcap(const J& c) {
  double cap = c.at("logit_softcap").get<double>();
  if (cap == 0) return {};
  bool tanh = c.at("softcap_kind").get<std::string>() == "tanh";
  return {tanh ? cpu::SoftcapKind::kTanh : cpu::SoftcapKind::kSigmoid, cap};
}

WindowConfig ReadWindow(const J& c) {
  WindowConfig w;
  w.kind = c.at("attn_window").get<std::string>() == "sliding" ? AttnWindow::kSliding
                                                              : AttnWindow::kFull;
  w.block_tokens = c.at("window.block_tokens").get<int64_t>();
  w.start_tokens = c.at("window.start_tokens").get<double>();
  w.end_tokens = c.at("window.end_tokens").get<double>();
  w.rounding = c.at("window.rounding").get<std::string>() == "ceil" ? WindowRounding::kCeil
                                                                   : WindowRounding::kFloor;
  w.long_short = c.at("long_short_windows").get<bool>();
  return w;
}

void ReadShape(const J& c, ModelConfig& m) {
  m.n_layer = c.at("n_layer").get<int64_t>();
  m.model_dim = c.at("model_dim").get<int64_t>();
  m.n_head = c.at("n_head").get<int64_t>();
  m.head_dim = c.at("head_dim").get<int64_t>();
  m.vocab_size = c.at("vocab_size").get<int64_t>();
  m.embed_vocab_size = c.at("embed_vocab_size").get<int64_t>();
  if (m.embed_vocab_size == 0) m.embed_vocab_size = m.vocab_size;
  m.bos_token = c.at("bos_token").get<int32_t>();
  m.mlp_ratio = c.at("mlp_ratio").get<int64_t>();
  m.seq_len = c.at("seq_len").get<int64_t>();
}

void ReadSwitches(const J& c, ModelConfig& m) {
  m.tie_embeddings = c.at("tie_embeddings").get<bool>();
  m.embed_norm = c.at("embed_norm").get<bool>();
  m.zero_init_lm_head = c.at("zero_init_lm_head").get<bool>();
  m.zero_init_proj = c.at("zero_init_proj").get<bool>();
  m.linear_init = c.at("linear_init").get<std::string>() == "uniform_half"
                      ? LinearInit::kUniformHalf
                      : LinearInit::kTorchDefault;
  m.mlp_act = c.at("mlp_act").get<std::string>() == "gelu" ? cpu::MlpAct::kGelu
                                                           : cpu::MlpAct::kRelu2;
  m.qk_norm = c.at("qk_norm").get<bool>();
  m.attn_scale = c.at("attn_scale").get<double>();
  m.softcap = ReadSoftcap(c);
  m.value_residual = c.at("value_residual").get<bool>();
  m.embed_shortcut = c.at("embed_shortcut").get<bool>();
  m.unet_skips = c.at("unet_skips").get<bool>();
  m.value_embeds = c.at("value_embeds").get<int64_t>();
  m.merged_qkv = c.at("merged_qkv").get<bool>();
  m.rope = c.at("rope").get<std::string>() == "half_truncated" ? cpu::RopeKind::kHalfTruncated
                                                               : cpu::RopeKind::kFull;
  m.rope_base = c.at("rope_base").get<double>();
  m.window = ReadWindow(c);
  m.doc_masking = c.at("doc_masking").get<bool>();
  m.skip_attn_layers = c.at("skip_attn_layers").get<std::vector<int64_t>>();
  m.storage.embed_bf16 = c.at("param_dtype.embed").get<std::string>() == "bf16";
  m.storage.head_bf16 = c.at("param_dtype.head").get<std::string>() == "bf16";
  m.storage.scalar_bf16 = c.at("param_dtype.scalar").get<std::string>() == "bf16";
  m.activation_dtype = c.at("activation_dtype").get<std::string>() == "bf16"
                           ? ActivationDtype::kBf16
                           : ActivationDtype::kFp32;
}

}  // namespace

Result<ModelConfig> ModelConfig::FromCanonical(const J& canonical) {
  ModelConfig m;
  try {
    ReadShape(canonical, m);
    ReadSwitches(canonical, m);
  } catch (const J::exception& e) {
    return Error{std::string("config is not canonical: ") + e.what(), ""};
  }
  return m;
}

bool ModelConfig::HasAttention(int64_t layer) const {
  return std::find(skip_attn_layers.begin(), skip_attn_layers.end(), layer) ==
         skip_attn_layers.end();
}

int64_t ModelConfig::ValueEmbedTable(int64_t layer) const {
  int64_t k = value_embeds;
  if (k == 0) return -1;
  if (layer < k) return layer;
  if (layer >= n_layer - k) return layer - (n_layer - k);
  return -1;
}

double ModelConfig::AttentionScale() const {
  return attn_scale > 0 ? attn_scale : 1.0 / std::sqrt(double(head_dim));
}

}  // namespace ablate
