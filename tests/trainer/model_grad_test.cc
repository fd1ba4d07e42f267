// The whole GPT on a tiny config, in double precision: the loss gradient of every parameter
// against central finite differences, with each knob of MODEL.md turned on in turn.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/trainer/grad_check.h"
#include "trainer/config/knob_schema.h"
#include "trainer/cpu/parallel.h"
#include "trainer/cpu/softcap_cross_entropy.h"
#include "trainer/model/gpt.h"
#include "trainer/model/window_schedule.h"

namespace ablate {
namespace {

using J = nlohmann::json;

// 4 layers, d 8, 2 heads of 4, vocab 13 (embedding 11 when asked), 8 tokens, BOS 3.
J TinyBase() {
  return {{"n_layer", 4},        {"model_dim", 8},           {"n_head", 2},
          {"head_dim", 4},       {"vocab_size", 13},         {"bos_token", 3},
          {"seq_len", 8},        {"batch_tokens", 16},       {"device_batch_tokens", 16},
          {"mlp_ratio", 2},      {"num_iterations", 10},     {"warmdown_iters", 2}};
}

ModelConfig Tiny(const J& overrides) {
  J partial = TinyBase();
  partial.update(overrides);
  Result<J> canonical = CanonicalizeConfig(partial);
  EXPECT_TRUE(canonical.ok()) << canonical.error().message;
  return *ModelConfig::FromCanonical(*canonical);
}

std::vector<int32_t> Tokens(int64_t b, int64_t t, int64_t vocab) {
  std::vector<int32_t> tok(b * (t + 1));
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = int32_t((i * 7 + 3 * (i / 5)) % vocab);
  tok[4] = 3;  // a BOS mid-sequence for document masking
  return tok;
}

struct KnobCase {
  std::string name;
  J overrides;
};

class ModelGrad : public ::testing::TestWithParam<KnobCase> {};

TEST_P(ModelGrad, MatchesFiniteDifferences) {
  cpu::SetThreads(1);  // thousands of tiny forwards: thread wake-ups would dominate
  ModelConfig m = Tiny(GetParam().overrides);
  int64_t b = 2, t = 8;
  Gpt<double> gpt(m, b, t);
  std::vector<double>& p = gpt.params();
  p = testing::RandomVec(int64_t(p.size()), 42, -0.6, 0.6);  // zero-inits too: never zero
  std::vector<int32_t> tokens = Tokens(b, t, m.embed_vocab_size);
  std::vector<int64_t> windows = LayerWindowBlocks(m, 3, 10);
  auto f = [&] { return gpt.Forward(tokens.data(), windows); };
  f();
  std::fill(gpt.grads().begin(), gpt.grads().end(), 0.0);
  gpt.Backward(1.0);
  std::vector<double> analytic = gpt.grads();
  for (const ParamInfo& info : gpt.layout().params()) {
    std::vector<double> x(p.begin() + info.offset, p.begin() + info.offset + info.numel);
    std::vector<double> g(analytic.begin() + info.offset,
                          analytic.begin() + info.offset + info.numel);
    auto fx = [&] {
      std::copy(x.begin(), x.end(), p.begin() + info.offset);
      return f();
    };
    EXPECT_LT(testing::MaxRelError(x, fx, g, 1e-5, 24), 1e-5) << info.name;
    std::copy(x.begin(), x.end(), p.begin() + info.offset);
  }
}

// The reported loss is the float64 mean of the per-token losses (issue 27: a sequential float
// sum reported r20's first step as 10.8258829 where the mean is 10.8258399, and was off by
// -7.8e-3 on 65,536 equal losses).
TEST(ReportedLoss, EqualLossesOfA65536TokenBatchAverageExactly) {
  std::vector<float> losses(65536, 10.8258399f);
  EXPECT_EQ(cpu::mean_loss(losses.data(), int64_t(losses.size())), double(10.8258399f));
}

TEST(ReportedLoss, ModelLossIsTheFloat64MeanOfItsTokenLosses) {
  int64_t b = 512, t = 128;  // 65,536 tokens, as one r20 micro-step
  ModelConfig m = Tiny({{"n_layer", 1},
                        {"model_dim", 8},
                        {"head_dim", 4},
                        {"vocab_size", 128},
                        {"seq_len", t},
                        {"batch_tokens", b * t},
                        {"device_batch_tokens", b * t}});
  Gpt<float> gpt(m, b, t);
  std::vector<double> init = testing::RandomVec(int64_t(gpt.params().size()), 7, -0.5, 0.5);
  std::copy(init.begin(), init.end(), gpt.params().begin());
  std::vector<int32_t> tokens = Tokens(b, t, m.embed_vocab_size);
  std::vector<int64_t> windows = LayerWindowBlocks(m, 0, 10);

  float loss = gpt.Forward(tokens.data(), windows);
  const std::vector<float>& losses = gpt.losses();
  ASSERT_EQ(int64_t(losses.size()), b * t);
  long double ref = 0;
  for (float l : losses) ref += l;
  ref /= (long double)losses.size();
  EXPECT_NEAR(loss, double(ref), 1e-6);

  // A zero head gives every token the same loss (log V): the mean is that loss, exactly.
  const ParamInfo* head = gpt.layout().Find("lm_head.weight");
  ASSERT_NE(head, nullptr);
  std::fill_n(gpt.params().begin() + head->offset, head->numel, 0.f);
  loss = gpt.Forward(tokens.data(), windows);
  ASSERT_EQ(*std::min_element(gpt.losses().begin(), gpt.losses().end()),
            *std::max_element(gpt.losses().begin(), gpt.losses().end()));
  EXPECT_EQ(loss, gpt.losses()[0]);
}

INSTANTIATE_TEST_SUITE_P(
    Knobs, ModelGrad,
    ::testing::Values(
        KnobCase{"base", J::object()},
        KnobCase{"tied", {{"tie_embeddings", true}}},
        KnobCase{"no_embed_norm", {{"embed_norm", false}}},
        KnobCase{"gelu", {{"mlp_act", "gelu"}}},
        KnobCase{"no_qk_norm", {{"qk_norm", false}}},
        KnobCase{"attn_scale", {{"attn_scale", 0.12}}},
        KnobCase{"softcap_tanh", {{"logit_softcap", 2.0}}},
        KnobCase{"softcap_sigmoid", {{"logit_softcap", 3.0}, {"softcap_kind", "sigmoid"}}},
        KnobCase{"value_residual", {{"value_residual", true}}},
        KnobCase{"value_residual_skip0", {{"value_residual", true}, {"skip_attn_layers", {0}}}},
        KnobCase{"embed_shortcut", {{"embed_shortcut", true}}},
        KnobCase{"unet_skips", {{"unet_skips", true}}},
        KnobCase{"value_embeds_2", {{"value_embeds", 2}}},
        KnobCase{"value_embeds_all", {{"value_embeds", 4}}},
        KnobCase{"merged_qkv", {{"merged_qkv", true}}},
        KnobCase{"rope_half", {{"rope", "half_truncated"}}},
        KnobCase{"sliding", {{"attn_window", "sliding"}, {"window.block_tokens", 2},
                             {"window.start_tokens", 2}, {"window.end_tokens", 8}}},
        KnobCase{"long_short", {{"attn_window", "sliding"}, {"window.block_tokens", 2},
                                {"window.start_tokens", 0}, {"window.end_tokens", 8},
                                {"window.rounding", "ceil"}, {"long_short_windows", true}}},
        KnobCase{"doc_masking", {{"doc_masking", true}}},
        KnobCase{"skip_attn", {{"skip_attn_layers", {1, 2}}}},
        KnobCase{"embed_vocab", {{"embed_vocab_size", 11}}},
        KnobCase{"r20_stack",
                 {{"embed_shortcut", true}, {"unet_skips", true}, {"value_embeds", 2},
                  {"merged_qkv", true}, {"rope", "half_truncated"}, {"attn_window", "sliding"},
                  {"window.block_tokens", 2}, {"window.start_tokens", 0},
                  {"window.end_tokens", 8}, {"window.rounding", "ceil"},
                  {"long_short_windows", true}, {"doc_masking", true},
                  {"skip_attn_layers", {2}}, {"attn_scale", 0.12}, {"logit_softcap", 3.0},
                  {"softcap_kind", "sigmoid"}, {"embed_vocab_size", 11}}}),
    [](const ::testing::TestParamInfo<KnobCase>& info) { return info.param.name; });

}  // namespace
}  // namespace ablate
