// The knob table itself. Defaults are the r8 UntieEmbed recipe (the first seed-era record), so a
// config that sets nothing is a faithful record; presets (presets.cc) move from there.
#include <vector>

#include "trainer/config/knob_schema.h"

namespace ablate {
namespace {

using J = nlohmann::json;
constexpr double kBig = 1e12;

KnobSpec Int(std::string_view name, long long def, double lo, double hi, std::string_view doc) {
  return {name, KnobType::kInt, J(def), lo, hi, {}, 0, doc};
}
KnobSpec Float(std::string_view name, double def, double lo, double hi, std::string_view doc) {
  return {name, KnobType::kFloat, J(def), lo, hi, {}, 0, doc};
}
KnobSpec Bool(std::string_view name, bool def, std::string_view doc) {
  return {name, KnobType::kBool, J(def), 0, 1, {}, 0, doc};
}
KnobSpec Choice(std::string_view name, std::string_view def, std::vector<std::string_view> choices,
                std::string_view doc) {
  return {name, KnobType::kChoice, J(std::string(def)), 0, 0, std::move(choices), 0, doc};
}

// Shape: layers, widths, heads, vocabulary, sequence.
std::vector<KnobSpec> ShapeKnobs() {
  return {
      Int("n_layer", 12, 1, 64, "transformer blocks (r5: 12)"),
      Int("model_dim", 768, 8, 16384, "residual width; must equal n_head * head_dim (r5: 768)"),
      Int("n_head", 6, 1, 128, "attention heads (r5: 6)"),
      Int("head_dim", 128, 2, 1024, "per-head width, even (r5: 128)"),
      Int("vocab_size", 50304, 2, 1 << 20, "lm_head rows; GPT-2's 50257 padded to 50304 (r5)"),
      Int("embed_vocab_size", 0, 0, 1 << 20,
          "embedding (and value-embedding) rows; 0 = vocab_size (r20: 50257)"),
      Int("bos_token", 50256, 0, 1 << 20,
          "token that opens each document (<|endoftext|> = 50256; byte tokenizer: 256)"),
      Int("mlp_ratio", 4, 1, 16, "MLP hidden width = mlp_ratio * model_dim"),
      Int("seq_len", 1024, 2, 1 << 20, "tokens per sequence (r12+: 65536, one sequence per GPU)"),
  };
}

// Architecture switches, each a record's change.
std::vector<KnobSpec> ArchitectureKnobs() {
  return {
      Bool("tie_embeddings", false, "share the embedding and lm_head (untied from r8)"),
      Bool("embed_norm", true, "weightless RMSNorm right after the embedding (r8)"),
      Bool("zero_init_lm_head", true, "zero-initialise lm_head (r8)"),
      Bool("zero_init_proj", true, "zero-initialise attention and MLP output projections (r5)"),
      Choice("linear_init", "torch_default", {"torch_default", "uniform_half"},
             "hidden matrices: U(±1/sqrt(in)), or U(±sqrt(3)*0.5/sqrt(in)) as in r20"),
      Choice("mlp_act", "relu2", {"relu2", "gelu"}, "MLP activation: relu(x)^2 (r5) or GELU"),
      Bool("qk_norm", true, "weightless RMSNorm on q and k over head_dim, before RoPE (r5)"),
      Float("attn_scale", 0, 0, 100, "attention scale; 0 = 1/sqrt(head_dim); r20 uses 0.12"),
      Float("logit_softcap", 0, 0, 1000,
            "cap c on the logits; 0 = off (r9: 30, r18: 15, r19/r20: 30 with sigmoid)"),
      Choice("softcap_kind", "tanh", {"tanh", "sigmoid"},
             "tanh: c*tanh(z/c) (r9, r18); sigmoid: c*sigmoid(z/(c/4)) (r19: 30*sigmoid(z/7.5))"),
      Bool("value_residual", false,
           "v = (1-λ)v + λ·v1 with v1 block 0's value, λ per layer init 0.5 (r9)"),
      Bool("embed_shortcut", false, "x = λ0·x + λ1·x0 at each block, init (1, 0) (r9)"),
      Bool("unet_skips", false,
           "decoder block n/2+i adds w_i × encoder output n/2-1-i, w init 1 (r11)"),
      Int("value_embeds", 0, 0, 64,
          "value-embedding tables k: first k and last k layers use tables 0..k-1 in order, "
          "v = λ0·v + λ1·ve (r17: 3); k = n_layer gives one per layer (r14)"),
      Bool("merged_qkv", false, "one (3, d, d) QKV parameter, Muon per slice (r20)"),
      Choice("rope", "full", {"full", "half_truncated"},
             "full RoPE, or head_dim/4 frequencies at base 1024 and the rest zero (r17)"),
      Float("rope_base", 10000, 1, 1e9, "RoPE base for rope=full"),
      Choice("attn_window", "full", {"full", "sliding"},
             "full causal attention, or a block sliding window with a warm-up schedule (r13)"),
      Int("window.block_tokens", 128, 1, 1 << 16, "window granularity in tokens (r15+: 128)"),
      Float("window.start_tokens", 128, 0, 1 << 24, "window size at step 0 (r18: 128, r20: 0)"),
      Float("window.end_tokens", 1856, 0, 1 << 24,
            "window size at the last step (r18: 1856, r20: 1728)"),
      Choice("window.rounding", "floor", {"floor", "ceil"},
             "blocks = max(1, round(lerp(start, end, step/N) / block)) (r18: floor, r20: ceil)"),
      Bool("long_short_windows", false,
           "per-layer long/short windows, short = long/2 blocks, encoder L if i%4==0, decoder "
           "mirrored (r20)"),
      Bool("doc_masking", false, "attention never crosses a bos_token boundary (r12)"),
      {"skip_attn_layers",
       KnobType::kIntList,
       J::array(),
       0,
       63,
       {},
       0,
       "layers without attention (r17: [7])"},
  };
}

// Parameter storage (the CPU rounds to bf16 after every update) and the stream's dtype; see
// MODEL.md.
std::vector<KnobSpec> StorageKnobs() {
  return {
      Choice("param_dtype.embed", "fp32", {"fp32", "bf16"},
             "storage of embed and value embeddings (and their grads and Adam moments): "
             "r11+: bf16"),
      Choice("param_dtype.head", "fp32", {"fp32", "bf16"}, "storage of lm_head (records: fp32)"),
      Choice("param_dtype.scalar", "fp32", {"fp32", "bf16"},
             "storage of the λs and skip weights: r11: bf16 (model.bfloat16()), r18+: fp32"),
      Choice("activation_dtype", "fp32", {"fp32", "bf16"},
             "x0, residual stream, U-Net skips, head input: bf16 rounds them (and the λ and "
             "skip-weight products, block outputs added) as the records' bf16 tensors (r11, r18, "
             "r20: bf16)"),
  };
}

// Muon, for the hidden matrices.
std::vector<KnobSpec> MuonKnobs() {
  return {
      Float("muon.lr", 0.02, 0, 10, "Muon learning rate (r8: 0.02, r11: 0.04, r13+: 0.05)"),
      Float("muon.momentum", 0.95, 0, 1, "Muon momentum when momentum warm-up is off"),
      Bool("muon.nesterov", true, "Nesterov momentum"),
      Choice("muon.momentum_form", "sum", {"sum", "lerp"},
             "sum: buf = μ·buf + g, update g + μ·buf (r8–r11); lerp: buf.lerp_(g, 1-μ), update "
             "g.lerp_(buf, μ) (r15+); equal at constant μ, they differ while μ warms up"),
      Int("muon.ns_steps", 5, 0, 100, "Newton–Schulz iterations"),
      {"muon.ns_coeffs",
       KnobType::kFloatList,
       J::array({3.4445, -4.7750, 2.0315}),
       -100,
       100,
       {},
       3,
       "quintic NS coefficients (a, b, c)"},
      Choice("muon.scale_rule", "sqrt_max1_ratio", {"sqrt_max1_ratio", "sqrt_max_dim"},
             "update scale: sqrt(max(1, rows/cols)) (r8+) or sqrt(max(rows, cols)) (r4–r7)"),
      Float("muon.momentum_warmup_start", 0.85, 0, 1, "momentum at step 0 when warming up"),
      Float("muon.momentum_warmup_end", 0.95, 0, 1, "momentum after the warm-up"),
      Int("muon.momentum_warmup_steps", 0, 0, kBig,
          "linear momentum warm-up length; 0 = off (r9: 500, r13+: 300)"),
  };
}

// Adam, for embeddings, head and scalars.
std::vector<KnobSpec> AdamKnobs() {
  return {
      Float("adam.embed_lr", 0.3, 0, 100, "Adam lr for embeddings and value embeddings"),
      Float("adam.head_lr", 0.002, 0, 100, "Adam lr for lm_head"),
      Float("adam.scalar_lr", 0.02, 0, 100, "Adam lr for scalars (λs, skip weights)"),
      Float("adam.beta1", 0.9, 0, 0.999999, "Adam beta1 (r13+: 0.8)"),
      Float("adam.beta2", 0.95, 0, 0.999999, "Adam beta2"),
      Float("adam.eps", 1e-8, 0, 1, "Adam epsilon (r20: 1e-10)"),
  };
}

// The learning-rate schedule.
std::vector<KnobSpec> ScheduleKnobs() {
  return {
      Int("num_iterations", 4578, 1, kBig, "training steps"),
      Int("warmup_iters", 0, 0, kBig, "linear LR warm-up steps"),
      Int("warmdown_iters", 1308, 0, kBig, "linear LR decay to lr_floor over the last steps"),
      Float("cooldown_frac", 0, 0, 1,
            "if > 0, decay over this fraction of training instead of warmdown_iters (r18: 0.4)"),
      Float("lr_floor", 0, 0, 1, "final LR multiplier: w + (1-w)·floor (r19: 0.1)"),
  };
}

// Batch, evaluation, timing.
std::vector<KnobSpec> RunKnobs() {
  return {
      Int("batch_tokens", 524288, 1, kBig, "global tokens per optimizer step"),
      Int("device_batch_tokens", 65536, 1, kBig,
          "tokens per rank per micro-step; grad accumulation = batch/(device·world)"),
      Int("val_tokens", 10485760, 1, kBig, "first val_tokens of the val shard are evaluated"),
      Int("val_every", 125, 0, kBig, "evaluate every N steps (and at the end); 0 = end only"),
      Float("target_val_loss", 3.28, 0, 100, "time-to-target threshold"),
      Int("untimed_steps", 10, 0, kBig, "first steps not counted in training time"),
      Int("seed", 0, 0, 4294967295.0, "random seed for initialisation and data order"),
  };
}

// Every knob, in the order `ablate knobs` lists them.
std::vector<KnobSpec> BuildKnobs() {
  std::vector<KnobSpec> all;
  for (auto section : {ShapeKnobs, ArchitectureKnobs, StorageKnobs, MuonKnobs, AdamKnobs,
                       ScheduleKnobs, RunKnobs}) {
    std::vector<KnobSpec> knobs = section();
    all.insert(all.end(), knobs.begin(), knobs.end());
  }
  return all;
}

}  // namespace

std::span<const KnobSpec> AllKnobs() {
  static const std::vector<KnobSpec>* knobs = new std::vector<KnobSpec>(BuildKnobs());
  return *knobs;
}

}  // namespace ablate
