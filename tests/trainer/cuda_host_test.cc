// Host-side logic of the CUDA backend that needs no GPU (label unit): the embedding backward's
// grouping of rows by id, the padded device layout of the parameters, and Train()'s refusal of
// multi-GPU CUDA runs before any work.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "trainer/config/knob_schema.h"
#include "trainer/config/presets.h"
#include "trainer/cuda/device_layout.h"
#include "trainer/cuda/dx_copy_plan.h"
#include "trainer/cuda/embedding.h"
#include "trainer/cuda/head_rows.h"
#include "trainer/model/model_config.h"
#include "trainer/train/event_sink.h"
#include "trainer/train/trainer.h"

namespace ablate {
namespace {

TEST(EmbeddingPlan, GroupsRowsByIdInPositionOrder) {
  std::vector<int32_t> idx = {7, 2, 7, 0, 2, 7, 9};
  cuda::EmbeddingPlan plan = cuda::BuildEmbeddingPlan(idx.data(), int64_t(idx.size()));
  EXPECT_EQ(plan.ids, (std::vector<int32_t>{0, 2, 7, 9}));
  EXPECT_EQ(plan.offsets, (std::vector<int32_t>{0, 1, 3, 6, 7}));
  EXPECT_EQ(plan.positions, (std::vector<int32_t>{3, 1, 4, 0, 2, 5, 6}));
}

TEST(EmbeddingPlan, EveryRowAppearsOnceUnderItsId) {
  std::vector<int32_t> idx(5000);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t((i * 7919 + i / 13) % 1013);
  cuda::EmbeddingPlan plan = cuda::BuildEmbeddingPlan(idx.data(), int64_t(idx.size()));
  ASSERT_EQ(plan.offsets.size(), plan.ids.size() + 1);
  ASSERT_EQ(plan.offsets.back(), int32_t(idx.size()));
  std::vector<int> seen(idx.size(), 0);
  for (size_t u = 0; u < plan.ids.size(); ++u) {
    for (int32_t p = plan.offsets[u]; p < plan.offsets[u + 1]; ++p) {
      EXPECT_EQ(idx[plan.positions[p]], plan.ids[u]);
      if (p > plan.offsets[u]) {
        EXPECT_LT(plan.positions[p - 1], plan.positions[p]);
      }
      ++seen[plan.positions[p]];
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

TEST(EmbeddingPlan, EmptyBatchHasOneOffset) {
  cuda::EmbeddingPlan plan = cuda::BuildEmbeddingPlan(nullptr, 0);
  EXPECT_TRUE(plan.ids.empty());
  EXPECT_EQ(plan.offsets, (std::vector<int32_t>{0}));
}

ModelConfig Config(const nlohmann::json& overrides) {
  nlohmann::json c = {
      {"n_layer", 2},      {"model_dim", 12},  {"n_head", 2},   {"head_dim", 6},
      {"bos_token", 1},    {"vocab_size", 50}, {"seq_len", 16}, {"device_batch_tokens", 32},
      {"batch_tokens", 32}};
  c.update(overrides);
  Result<nlohmann::json> canonical = CanonicalizeConfig(c);
  EXPECT_TRUE(canonical.ok()) << canonical.error().message;
  return *ModelConfig::FromCanonical(*canonical);
}

// Replays the CUDA backward's order of the ops that touch dx (dx_copy_plan.h, gpt_backward.cc)
// with the plan's choices: every bf16 read of dx must find the copy its last writer wrote, and no
// copy may be written that is overwritten or left unread. Returns "" or the first fault.
std::string ReplayDxCopies(const ModelConfig& m) {
  cuda::DxCopyPlan p = cuda::PlanDxCopies(m);
  bool copy = false, unread = false;
  std::string fault;
  auto write = [&](bool with_copy, const std::string& who) {
    if (unread && fault.empty()) fault = who + " overwrites a copy nothing read";
    copy = unread = with_copy;
  };
  auto read = [&](const std::string& who) {
    if (!copy && fault.empty()) fault = who + " reads dx as bf16 without a copy";
    unread = false;
  };
  write(p.final_norm, "the final norm");
  int64_t half = m.n_layer / 2;
  for (int64_t i = m.n_layer - 1; i >= 0; --i) {
    std::string layer = "layer " + std::to_string(i) + "'s ";
    if (m.unet_skips && i < half) write(true, layer + "skip add");
    read(layer + "mlp");
    write(p.mlp_norm[size_t(i)], layer + "mlp norm");
    if (m.HasAttention(i)) {
      read(layer + "attention");
      write(p.attention_norm[size_t(i)], layer + "attention norm");
    } else if (p.attention_norm[size_t(i)] && fault.empty()) {
      fault = layer + "attention norm has a copy but the layer has no attention";
    }
    if (m.embed_shortcut) {
      write(p.shortcut[size_t(i)], layer + "shortcut");
    } else if (p.shortcut[size_t(i)] && fault.empty()) {
      fault = layer + "shortcut has a copy but there is no shortcut";
    }
  }
  if (unread && fault.empty()) fault = "a copy is left unread after layer 0";
  return fault;
}

TEST(DxCopyPlan, EveryBf16ReadOfDxFindsItsCopyAndNoneIsWasted) {
  int cases = 0;
  for (const Preset& preset : AllPresets()) {
    Result<nlohmann::json> c = PresetConfig(preset.name, Scale::kFull);
    ASSERT_TRUE(c.ok()) << c.error().message;
    ModelConfig m = *ModelConfig::FromCanonical(*c);
    EXPECT_EQ(ReplayDxCopies(m), "") << preset.name;
    ++cases;
  }
  EXPECT_GE(cases, 5);
  for (int64_t layers : {2, 4, 6}) {
    for (int knobs = 0; knobs < 4; ++knobs) {
      bool unet = knobs & 1, shortcut = knobs & 2;
      // No layer without attention, the first, the last, and all but the first.
      std::vector<int64_t> all_but_first;
      for (int64_t i = 1; i < layers; ++i) all_but_first.push_back(i);
      for (const std::vector<int64_t>& skipped :
           {std::vector<int64_t>{}, {0}, {layers - 1}, all_but_first}) {
        ModelConfig m = Config({{"n_layer", layers},
                                {"unet_skips", unet},
                                {"embed_shortcut", shortcut},
                                {"skip_attn_layers", skipped}});
        EXPECT_EQ(ReplayDxCopies(m), "") << layers << " layers, unet " << unet << ", shortcut "
                                         << shortcut << ", " << skipped.size() << " skipped";
      }
    }
  }
}

// d = 12: a (d, d) matrix is 144 elements, not a multiple of 64, so padding shows.
// The head's rows (head_rows.h) at the records' shapes and over a sweep of sizes: within the
// scratch budget, every chunk fits its group, groups are whole chunks but for one group of all
// n rows, and dW is read and written no more often than once per chunk of the old plan (the
// largest chunk the budget holds).
TEST(HeadRows, FitTheBudgetAndReadDwLessOftenThanOncePerChunk) {
  cuda::HeadRows r20 = cuda::PlanHeadRows(65536, 50304);
  EXPECT_EQ(r20.chunk, 2048);
  EXPECT_EQ(r20.group, 10240);  // 7 dW passes instead of 13
  for (int64_t v : {300, 4096, 50304, 128256, 262144}) {
    for (int64_t n : {1, 63, 64, 700, 2048, 2049, 8192, 49152, 65536, 262144}) {
      cuda::HeadRows r = cuda::PlanHeadRows(n, v);
      std::string at = "n " + std::to_string(n) + " v " + std::to_string(v);
      ASSERT_GE(r.chunk, 1) << at;
      EXPECT_LE(r.chunk, r.group) << at;
      EXPECT_LE(r.group, n) << at;
      EXPECT_TRUE(r.group % r.chunk == 0 || r.group == n) << at;
      EXPECT_TRUE(r.chunk % 64 == 0 || r.chunk == n) << at;
      EXPECT_LE(r.chunk * v * 4 + r.group * v * 2, cuda::kHeadScratchBytes) << at;
      int64_t old_chunk = std::min(cuda::kHeadScratchBytes / (v * 6) / 64 * 64, n);
      EXPECT_LE((n + r.group - 1) / r.group, (n + old_chunk - 1) / old_chunk) << at;
    }
  }
  EXPECT_EQ(cuda::PlanHeadRows(0, 50304).group, 0);
}

TEST(DeviceLayout, AlignsTensorsButKeepsQkvAdjacent) {
  for (bool merged : {false, true}) {
    ModelConfig m = Config({{"merged_qkv", merged}, {"embed_shortcut", true}});
    ParamLayout host(m);
    cuda::DeviceLayout dev(host);
    int64_t prev_end = 0;
    for (const ParamInfo& p : host.params()) {
      int64_t start = dev.Map(p.offset);
      EXPECT_GE(start, prev_end) << p.name;
      bool follows_q = p.name.ends_with("attn.k.weight") || p.name.ends_with("attn.v.weight");
      if (follows_q) {
        EXPECT_EQ(start, prev_end) << p.name;
      } else {
        EXPECT_EQ(start % cuda::DeviceLayout::kAlign, 0) << p.name;
      }
      EXPECT_EQ(dev.Map(p.offset + p.numel - 1), start + p.numel - 1) << p.name;
      prev_end = start + p.numel;
    }
    EXPECT_GE(dev.total(), prev_end);
    EXPECT_EQ(dev.total() % cuda::DeviceLayout::kAlign, 0);
  }
}

// The gradient all-reduce's ranges: the global tensors, then one per block, together the whole
// buffer, each block's tensors inside its own range.
TEST(DeviceLayout, BlockRangesCoverTheBufferInOrder) {
  for (bool merged : {false, true}) {
    ModelConfig m = Config({{"n_layer", 4}, {"merged_qkv", merged}, {"embed_shortcut", true},
                            {"unet_skips", true}, {"value_embeds", 1}});
    ParamLayout host(m);
    cuda::DeviceLayout dev(host);
    std::vector<int64_t> starts = dev.BlockStarts(m.n_layer);
    ASSERT_EQ(starts.size(), size_t(m.n_layer) + 1);
    EXPECT_GT(starts[0], 0);  // embeddings first
    EXPECT_EQ(starts.back(), dev.total());
    for (size_t i = 1; i < starts.size(); ++i) EXPECT_LT(starts[i - 1], starts[i]);
    for (const ParamInfo& p : host.params()) {
      int64_t begin = dev.Map(p.offset), end = begin + p.numel;
      int64_t block = -1;
      if (p.name.starts_with("blocks.")) block = std::stoll(p.name.substr(7));
      int64_t lo = block < 0 ? 0 : starts[size_t(block)];
      int64_t hi = block < 0 ? starts[0] : starts[size_t(block) + 1];
      EXPECT_GE(begin, lo) << p.name;
      EXPECT_LE(end, hi) << p.name;
    }
  }
}

// Multi-GPU runs that cannot work are refused before anything is opened or allocated (no shards
// needed), with one error event that says why, on any machine: a --world-size that disagrees
// with the GPUs, and a device index no machine has (4095) among several.
TEST(CudaTrainOptions, ImpossibleMultiGpuRunsAreRefusedBeforeAnyWork) {
  Result<nlohmann::json> config = CanonicalizeConfig({{"bos_token", 1}, {"vocab_size", 64}});
  ASSERT_TRUE(config.ok()) << config.error().message;
  TrainOptions missing_gpu;
  missing_gpu.backend = Backend::kCuda;
  missing_gpu.gpus = {0, 4095};
  TrainOptions two_ranks;
  two_ranks.backend = Backend::kCuda;
  two_ranks.world_size = 2;  // one GPU
  for (auto [o, words] : {std::pair{missing_gpu, "CUDA"}, std::pair{two_ranks, "disagrees"}}) {
    MemorySink sink;
    TrainOutcome out = Train(*config, o, sink);
    EXPECT_EQ(out.status, TrainStatus::kInvalid);
    EXPECT_NE(out.message.find(words), std::string::npos) << out.message;
    std::vector<nlohmann::json> events = sink.events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0]["event"], "error");
  }
}

}  // namespace
}  // namespace ablate
