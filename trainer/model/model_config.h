// The model's knobs, typed: read once from a canonical config (trainer/config) so that the model
// code never looks up JSON. Semantics are MODEL.md's.
#ifndef ABLATE_TRAINER_MODEL_MODEL_CONFIG_H_
#define ABLATE_TRAINER_MODEL_MODEL_CONFIG_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/cpu/mlp_act.h"
#include "trainer/cpu/rope.h"
#include "trainer/cpu/softcap_cross_entropy.h"

namespace ablate {

enum class LinearInit { kTorchDefault, kUniformHalf };
enum class AttnWindow { kFull, kSliding };
enum class WindowRounding { kFloor, kCeil };

struct WindowConfig {
  AttnWindow kind = AttnWindow::kFull;
  int64_t block_tokens = 128;
  double start_tokens = 128;
  double end_tokens = 1856;
  WindowRounding rounding = WindowRounding::kFloor;
  bool long_short = false;
};

// Which optimizer groups store their parameters (with their gradients and Adam moments) in
// bf16 (`param_dtype.*`); the tied embedding follows `head`.
struct ParamStorage {
  bool embed_bf16 = false, head_bf16 = false, scalar_bf16 = false;
};

// `activation_dtype`: kBf16 rounds x0, the residual stream, the U-Net skips and the head input
// to bf16 where the records' bf16 tensors are rounded (MODEL.md "Activation dtype").
enum class ActivationDtype { kFp32, kBf16 };

struct ModelConfig {
  int64_t n_layer = 0, model_dim = 0, n_head = 0, head_dim = 0;
  int64_t vocab_size = 0;
  int64_t embed_vocab_size = 0;  // resolved: never 0
  int32_t bos_token = 0;
  int64_t mlp_ratio = 4;
  int64_t seq_len = 0;
  bool tie_embeddings = false, embed_norm = true;
  bool zero_init_lm_head = true, zero_init_proj = true;
  LinearInit linear_init = LinearInit::kTorchDefault;
  cpu::MlpAct mlp_act = cpu::MlpAct::kRelu2;
  bool qk_norm = true;
  double attn_scale = 0;  // 0 → 1/sqrt(head_dim)
  cpu::Softcap softcap;
  bool value_residual = false, embed_shortcut = false, unet_skips = false;
  int64_t value_embeds = 0;
  bool merged_qkv = false;
  cpu::RopeKind rope = cpu::RopeKind::kFull;
  double rope_base = 10000;
  WindowConfig window;
  bool doc_masking = false;
  std::vector<int64_t> skip_attn_layers;
  ParamStorage storage;
  ActivationDtype activation_dtype = ActivationDtype::kFp32;

  static Result<ModelConfig> FromCanonical(const nlohmann::json& canonical);

  int64_t hidden_dim() const { return mlp_ratio * model_dim; }
  bool HasAttention(int64_t layer) const;
  // Value-embedding table used by `layer`, or -1 (MODEL.md: first k and last k layers).
  int64_t ValueEmbedTable(int64_t layer) const;
  double AttentionScale() const;
  bool Bf16Stream() const { return activation_dtype == ActivationDtype::kBf16; }
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_MODEL_MODEL_CONFIG_H_
