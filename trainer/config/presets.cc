// The seed-era record presets and the small/tiny scales. The schema defaults are r8, so each
// preset lists only what its record changed (reference/record-presets.md, one column each).
#include "trainer/config/presets.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/config/knob_schema.h"

namespace ablate {
namespace {

using J = nlohmann::json;

J R9() {
  return {{"value_residual", true},     {"embed_shortcut", true},
          {"logit_softcap", 30.0},      {"muon.momentum_warmup_steps", 500},
          {"adam.scalar_lr", 0.02},     {"num_iterations", 3200},
          {"warmdown_iters", 914}};
}

J R11() {
  J j = R9();
  j.update(J{{"unet_skips", true},       {"adam.embed_lr", 0.6}, {"adam.head_lr", 0.008},
             {"adam.scalar_lr", 0.04},   {"muon.lr", 0.04},      {"num_iterations", 3000},
             {"warmdown_iters", 900},
             // model.bfloat16() then .float() on CastedLinear only: the embedding, every λ and
             // the skip weights stay bf16 parameters.
             {"param_dtype.embed", "bf16"}, {"param_dtype.scalar", "bf16"},
             // ...and every activation is a bf16 tensor: x0, the stream, the skips.
             {"activation_dtype", "bf16"}});
  return j;
}

J R18() {
  J j = R11();
  j.update(J{{"value_residual", false},
             {"value_embeds", 3},
             {"rope", "half_truncated"},
             {"attn_window", "sliding"},
             {"window.start_tokens", 128.0},
             {"window.end_tokens", 1856.0},
             {"window.rounding", "floor"},
             {"doc_masking", true},
             {"skip_attn_layers", {7}},
             {"seq_len", 65536},
             {"device_batch_tokens", 65536},
             {"adam.beta1", 0.8},
             {"muon.lr", 0.05},
             {"muon.momentum_warmup_steps", 300},
             {"muon.momentum_form", "lerp"},
             {"param_dtype.scalar", "fp32"},  // fp32 params, only the embeddings bf16
             {"cooldown_frac", 0.4},
             {"warmdown_iters", 0},
             {"num_iterations", 1390},
             {"logit_softcap", 15.0},
             {"softcap_kind", "tanh"}});
  return j;
}

J R20() {
  J j = R18();
  j.update(J{{"merged_qkv", true},
             {"long_short_windows", true},
             {"attn_scale", 0.12},
             {"adam.eps", 1e-10},
             {"logit_softcap", 30.0},
             {"softcap_kind", "sigmoid"},
             {"lr_floor", 0.1},
             {"num_iterations", 1393},
             {"window.start_tokens", 0.0},
             {"window.end_tokens", 1728.0},
             {"window.rounding", "ceil"},
             {"embed_vocab_size", 50257},
             {"linear_init", "uniform_half"}});
  return j;
}

std::vector<Preset> BuildPresets() {
  return {
      {"r8-untied", "r8 UntieEmbed (11/03/24, 10.8 min, 4578 steps)",
       "untied embedding and head, RMSNorm after the embedding, zero-init head", "fineweb10B",
       J::object()},
      {"r9-shortcuts", "r9 ShortcutsTweaks (11/06/24, 8.2 min, 3200 steps)",
       "value residual, embedding shortcut, Muon momentum warm-up, tanh softcap 30", "fineweb10B",
       R9()},
      {"r11-unet", "r11 UNetDoubleLr (11/10/24, 7.2 min, 3000 steps)",
       "U-Net skips with learnable weights, doubled learning rates (head 4x)", "fineweb10B", R11()},
      {"r18-softcap15", "r18 SoftCap (01/04/25, 3.4 min, 1390 steps)",
       "softcap 30 -> 15 on the r17 stack: 3 value embeds, half-truncated RoPE, sliding window, "
       "document masking, no attention in layer 7, 64K-token sequences",
       "fineweb10B", R18()},
      {"r20-sub3min", "r20 Sub3Min (01/16/25, 2.992 min, 1393 steps)",
       "merged QKV, long-short windows, attention scale 0.12, Adam eps 1e-10, sigmoid cap, "
       "LR floor 0.1",
       "fineweb10B", R20()},
  };
}

struct ScaleShape {
  long long n_layer, model_dim, n_head, head_dim;
  long long max_seq_len, batch_tokens, device_batch_tokens, num_iterations;
  long long val_tokens, val_every, untimed_steps;
};

constexpr ScaleShape kSmall = {6, 384, 3, 128, 8192, 65536, 16384, 0, 1048576, 50, 10};
constexpr ScaleShape kTiny = {6, 64, 2, 32, 256, 2048, 2048, 300, 16384, 25, 2};

long long Scaled(long long v, double r) { return static_cast<long long>(std::llround(v * r)); }

// Windows keep their schedule in blocks (r18: 1 → 14, r20: long 1 → 14, short 0 → 7); only the
// block shrinks, to the largest power of two that lets the longest window fit twice in the
// sequence. The small scale's 8192 GPT-2 tokens keep the records' 128-token blocks (the windows
// are the same number of tokens of the same documents); the tiny scale's 256 bytes get 8-byte
// blocks, windows of 8 to ~116 bytes against fortunes of a few hundred bytes, so the window
// still limits early and the document mask late, as at full size.
void ScaleWindows(const J& c, long long seq, J& out) {
  long long block = c["window.block_tokens"];
  double widest = std::max(c["window.start_tokens"].get<double>(),
                           c["window.end_tokens"].get<double>());
  double blocks = std::max(1.0, std::ceil(widest / double(block)));
  long long fit = std::max(1LL, static_cast<long long>(double(seq) / (2 * blocks)));
  long long scaled = 1;
  while (scaled * 2 <= std::min(block, fit)) scaled *= 2;
  if (block <= fit) scaled = block;  // the records' block when it fits
  double r = double(scaled) / double(block);
  out["window.block_tokens"] = scaled;
  out["window.start_tokens"] = c["window.start_tokens"].get<double>() * r;
  out["window.end_tokens"] = c["window.end_tokens"].get<double>() * r;
}

// Layer-indexed features keep their place in the U-Net: value embeddings stay "first k and last
// k layers" with the same share of the stack (r18: 3 of 12 at each end → 2 of 6, so the middle
// still has none), and a skipped attention layer keeps its half (encoder or decoder) and its
// relative position within it (r18's layer 7, second of the decoder's 6 → layer 3, first of 3).
void ScaleLayers(const J& c, long long layers, J& out) {
  long long old_layers = c["n_layer"], old_half = std::max(1LL, old_layers / 2),
            half = std::max(1LL, layers / 2);
  J skip = J::array();
  for (const J& l : c["skip_attn_layers"]) {
    long long i = l.get<long long>();
    long long m = i < old_half ? i * half / old_half : half + (i - old_half) * half / old_half;
    m = std::min(m, layers - 1);
    if (std::find(skip.begin(), skip.end(), J(m)) == skip.end()) skip.push_back(m);
  }
  out["skip_attn_layers"] = skip;
  long long ve = c["value_embeds"];
  if (ve == old_layers) {
    out["value_embeds"] = layers;
  } else if (ve > 0) {
    long long k = std::max(1LL, Scaled(ve, double(layers) / double(old_layers)));
    if (2 * ve < old_layers) k = std::min(k, (layers - 1) / 2);  // keep a middle without VEs
    out["value_embeds"] = std::max(1LL, std::min(k, layers / 2));
  }
}

}  // namespace

std::span<const Preset> AllPresets() {
  static const std::vector<Preset>* presets = new std::vector<Preset>(BuildPresets());
  return *presets;
}

const Preset* FindPreset(std::string_view name) {
  for (const Preset& p : AllPresets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Result<Scale> ParseScale(std::string_view name) {
  if (name == "full") return Scale::kFull;
  if (name == "small") return Scale::kSmall;
  if (name == "tiny") return Scale::kTiny;
  return Error{"unknown scale '" + std::string(name) + "'; expected full, small or tiny", "scale"};
}

std::string_view ScaleName(Scale scale) {
  switch (scale) {
    case Scale::kFull: return "full";
    case Scale::kSmall: return "small";
    case Scale::kTiny: return "tiny";
  }
  return "?";
}

Result<J> ApplyScale(const J& c, Scale scale) {
  if (scale == Scale::kFull) return c;
  const ScaleShape& s = scale == Scale::kSmall ? kSmall : kTiny;
  J out = c;
  long long old_seq = c["seq_len"], old_iters = c["num_iterations"];
  out["n_layer"] = s.n_layer;
  out["model_dim"] = s.model_dim;
  out["n_head"] = s.n_head;
  out["head_dim"] = s.head_dim;
  long long seq = std::min(old_seq, s.max_seq_len);
  out["seq_len"] = seq;
  out["batch_tokens"] = s.batch_tokens;
  out["device_batch_tokens"] = std::max(s.device_batch_tokens, seq);
  if (s.batch_tokens % out["device_batch_tokens"].get<long long>() != 0) {
    out["batch_tokens"] = out["device_batch_tokens"];
  }
  ScaleWindows(c, seq, out);
  // Step counts shrink in proportion so that schedules keep their shape.
  long long iters = s.num_iterations > 0 ? s.num_iterations : std::max(1LL, old_iters / 4);
  double step_ratio = double(iters) / double(old_iters);
  out["num_iterations"] = iters;
  for (const char* k : {"warmup_iters", "warmdown_iters", "muon.momentum_warmup_steps"}) {
    out[k] = Scaled(c[k], step_ratio);
  }
  out["val_tokens"] = s.val_tokens;
  out["val_every"] = s.val_every;
  out["untimed_steps"] = s.untimed_steps;
  ScaleLayers(c, s.n_layer, out);
  if (scale == Scale::kTiny) {
    // The byte-level tokenizer of `ablate-data encode`: bytes 0..255, BOS 256, padded to 512.
    out["vocab_size"] = 512;
    out["embed_vocab_size"] = 0;
    out["bos_token"] = 256;
    // 3.28 nats is meaningless for bytes; this is a loss a tiny model reaches on English text.
    out["target_val_loss"] = 2.2;
  }
  return CanonicalizeConfig(out);
}

Result<J> PresetConfig(std::string_view name, Scale scale) {
  const Preset* p = FindPreset(name);
  if (p == nullptr) {
    std::string all;
    for (const Preset& q : AllPresets()) all += (all.empty() ? "" : ", ") + std::string(q.name);
    return Error{"unknown preset '" + std::string(name) + "'; available: " + all, "preset"};
  }
  Result<J> base = CanonicalizeConfig(p->overrides);
  if (!base.ok()) return base.error();
  return ApplyScale(*base, scale);
}

}  // namespace ablate
