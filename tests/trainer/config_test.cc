// Knob schema, canonical form, hashing and presets.
#include <gtest/gtest.h>

#include <cmath>

#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"
#include "trainer/config/sha256.h"

namespace ablate {
namespace {

using J = nlohmann::json;

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000, 'a')).substr(0, 16), "41edece42d63e8d9");
}

TEST(KnobSchema, EveryKnobHasValidDefaultAndDoc) {
  for (const KnobSpec& k : AllKnobs()) {
    EXPECT_FALSE(k.doc.empty()) << k.name;
    Result<J> v = ValidateKnobValue(k, k.default_value);
    EXPECT_TRUE(v.ok()) << k.name << ": " << (v.ok() ? "" : v.error().message);
    EXPECT_EQ(FindKnob(k.name), &k);
  }
}

TEST(KnobSchema, CanonicalFillsDefaultsAndSortsKeys) {
  Result<J> c = CanonicalizeConfig(J{{"muon", {{"lr", 0.05}}}, {"logit_softcap", 30}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->size(), AllKnobs().size());
  EXPECT_EQ((*c)["muon.lr"], 0.05);
  EXPECT_TRUE((*c)["logit_softcap"].is_number_float());
  std::string text = CanonicalJson(*c);
  EXPECT_LT(text.find("\"adam.beta1\""), text.find("\"n_layer\""));
}

TEST(KnobSchema, HashIgnoresSpellingAndSeedButNotValues) {
  J a = *CanonicalizeConfig(J{{"muon.lr", 0.05}, {"seed", 1}});
  J b = *CanonicalizeConfig(J{{"muon", {{"lr", 0.05}}}, {"seed", 2}});
  J c = *CanonicalizeConfig(J{{"muon.lr", 0.04}});
  EXPECT_EQ(ConfigHash(a), ConfigHash(b));
  EXPECT_NE(ConfigHash(a), ConfigHash(c));
  EXPECT_EQ(ConfigHash(a).size(), 64u);
}

TEST(KnobSchema, RejectsUnknownWithSuggestions) {
  Result<J> c = CanonicalizeConfig(J{{"logit_softcapp", 30}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().key, "logit_softcapp");
  EXPECT_NE(c.error().message.find("did you mean 'logit_softcap'"), std::string::npos)
      << c.error().message;
  Result<J> d = CanonicalizeConfig(J{{"momentum_warmup_steps", 0}});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("muon.momentum_warmup_steps"), std::string::npos);
}

TEST(KnobSchema, RejectsBadValues) {
  EXPECT_FALSE(CanonicalizeConfig(J{{"n_layer", 0}}).ok());
  EXPECT_FALSE(CanonicalizeConfig(J{{"n_layer", 2.5}}).ok());
  EXPECT_FALSE(CanonicalizeConfig(J{{"unet_skips", 1}}).ok());
  EXPECT_FALSE(CanonicalizeConfig(J{{"mlp_act", "swish"}}).ok());
  EXPECT_FALSE(CanonicalizeConfig(J{{"muon.ns_coeffs", {1, 2}}}).ok());
  Result<J> shape = CanonicalizeConfig(J{{"n_head", 5}});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.error().key, "model_dim");
}

TEST(KnobSchema, ParsesKnobText) {
  EXPECT_EQ(*ParseKnobText(*FindKnob("logit_softcap"), "15"), J(15.0));
  EXPECT_EQ(*ParseKnobText(*FindKnob("unet_skips"), "false"), J(false));
  EXPECT_EQ(*ParseKnobText(*FindKnob("skip_attn_layers"), "7,3"), J({3, 7}));
  EXPECT_FALSE(ParseKnobText(*FindKnob("n_layer"), "12x").ok());
}

TEST(KnobSchema, DiffNamesChangedKnobs) {
  J a = *CanonicalizeConfig(J::object());
  J b = *ApplyOverrides(a, J{{"logit_softcap", 15}});
  J d = ConfigDiff(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d["logit_softcap"]["to"], 15.0);
}

TEST(Presets, RecordsMatchReferenceSheet) {
  J r20 = *PresetConfig("r20-sub3min", Scale::kFull);
  EXPECT_EQ(r20["num_iterations"], 1393);
  EXPECT_EQ(r20["attn_scale"], 0.12);
  EXPECT_EQ(r20["adam.eps"], 1e-10);
  EXPECT_EQ(r20["softcap_kind"], "sigmoid");
  EXPECT_EQ(r20["skip_attn_layers"], J({7}));
  EXPECT_TRUE(r20["merged_qkv"].get<bool>());
  J r9 = *PresetConfig("r9-shortcuts", Scale::kFull);
  EXPECT_EQ(r9["warmdown_iters"], 914);
  EXPECT_EQ(r9["muon.momentum_warmup_steps"], 500);
  J r8 = *PresetConfig("r8-untied", Scale::kFull);
  EXPECT_EQ(r8["num_iterations"], 4578);
  EXPECT_FALSE(r8["tie_embeddings"].get<bool>());
  EXPECT_FALSE(PresetConfig("r99", Scale::kFull).ok());
}

TEST(Presets, ScalesKeepEveryFeatureFlag) {
  for (const Preset& p : AllPresets()) {
    J full = *PresetConfig(p.name, Scale::kFull);
    for (Scale s : {Scale::kSmall, Scale::kTiny}) {
      Result<J> scaled = PresetConfig(p.name, s);
      ASSERT_TRUE(scaled.ok()) << p.name << ": " << scaled.error().message;
      for (const char* flag : {"value_residual", "embed_shortcut", "unet_skips", "merged_qkv",
                               "long_short_windows", "doc_masking", "logit_softcap",
                               "softcap_kind", "rope", "attn_window", "attn_scale"}) {
        EXPECT_EQ((*scaled)[flag], full[flag]) << p.name << " " << flag;
      }
      EXPECT_EQ((*scaled)["value_embeds"] == 0, full["value_embeds"] == 0);
      EXPECT_EQ((*scaled)["skip_attn_layers"].empty(), full["skip_attn_layers"].empty());
    }
  }
  J tiny = *PresetConfig("r20-sub3min", Scale::kTiny);
  EXPECT_EQ(tiny["vocab_size"], 512);
  EXPECT_LE(tiny["seq_len"].get<long long>(), 256);
}

// MODEL.md "Scales": windows keep their block counts and stay a fraction of a document, the
// value embeddings stay "first k and last k" with a middle that has none, and a skipped
// attention layer keeps its half of the U-Net and its place in it.
TEST(Presets, SmallerScalesKeepTheRecordsStructure) {
  auto blocks = [](const J& c, double tokens) {
    double b = tokens / c["window.block_tokens"].get<double>();
    return c["window.rounding"] == "ceil" ? std::ceil(b) : std::floor(b);
  };
  for (const char* name : {"r18-softcap15", "r20-sub3min"}) {
    J full = *PresetConfig(name, Scale::kFull);
    J small = *PresetConfig(name, Scale::kSmall);
    J tiny = *PresetConfig(name, Scale::kTiny);
    // Small: the same GPT-2 documents, so the same windows in tokens.
    for (const char* k : {"window.block_tokens", "window.start_tokens", "window.end_tokens"}) {
      EXPECT_EQ(small[k], full[k]) << name << " " << k;
    }
    // Tiny: 8-byte blocks, the schedule's block counts unchanged (1 -> 14 at the end).
    EXPECT_EQ(tiny["window.block_tokens"], 8) << name;
    for (const char* k : {"window.start_tokens", "window.end_tokens"}) {
      EXPECT_EQ(blocks(tiny, tiny[k]), blocks(full, full[k])) << name << " " << k;
    }
    EXPECT_EQ(blocks(tiny, tiny["window.end_tokens"]), 14) << name;
    EXPECT_LE(2 * tiny["window.end_tokens"].get<double>(), tiny["seq_len"].get<double>());
    for (const J& c : {small, tiny}) {
      EXPECT_EQ(c["n_layer"], 6);
      EXPECT_EQ(c["value_embeds"], 2) << name;  // layers 0, 1 and 4, 5; none in 2, 3
      EXPECT_EQ(c["skip_attn_layers"], J::array({3})) << name;  // 7 = decoder's 2nd of 6 -> 3
    }
  }
  // k = n_layer (one table per layer) stays one per layer.
  J ve_all = *ApplyScale(*CanonicalizeConfig(J{{"value_embeds", 12}}), Scale::kTiny);
  EXPECT_EQ(ve_all["value_embeds"], 6);
}

}  // namespace
}  // namespace ablate
