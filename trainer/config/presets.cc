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
             {"warmdown_iters", 900}});
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
  long long old_layers = c["n_layer"], old_seq = c["seq_len"], old_iters = c["num_iterations"];
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
  // Windows shrink with the sequence so that they cover the same fraction of it.
  double seq_ratio = double(seq) / double(old_seq);
  out["window.block_tokens"] = std::max(1LL, Scaled(c["window.block_tokens"], seq_ratio));
  out["window.start_tokens"] = c["window.start_tokens"].get<double>() * seq_ratio;
  out["window.end_tokens"] = c["window.end_tokens"].get<double>() * seq_ratio;
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
  // Layer-indexed features map onto the smaller stack.
  J skip = J::array();
  for (const J& l : c["skip_attn_layers"]) {
    long long m = l.get<long long>() * s.n_layer / old_layers;
    if (std::find(skip.begin(), skip.end(), J(m)) == skip.end()) skip.push_back(m);
  }
  out["skip_attn_layers"] = skip;
  long long ve = c["value_embeds"];
  out["value_embeds"] = ve == old_layers ? s.n_layer : std::min(ve, s.n_layer / 2);
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
