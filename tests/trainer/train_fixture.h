// Shared pieces of the training tests: a scratch directory with generated token shards, a
// tiny canonical config that trains in well under a second per step, and a run on those shards
// with its loss curve.
#ifndef ABLATE_TESTS_TRAINER_TRAIN_FIXTURE_H_
#define ABLATE_TESTS_TRAINER_TRAIN_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "tests/trainer/data/temp_dir.h"
#include "trainer/config/knob_schema.h"
#include "trainer/data/shard_writer.h"
#include "trainer/train/event_sink.h"
#include "trainer/train/trainer.h"

namespace ablate::testing {

// Text-like tokens: documents opened by BOS 1, a few recurring "words" over vocab 64.
inline std::vector<uint16_t> SyntheticTokens(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> out;
  const std::vector<std::vector<uint16_t>> words = {{5, 6, 7}, {8, 9},       {10, 11, 12, 13},
                                                    {20, 21},  {30, 31, 32}, {40, 41, 42, 43, 44}};
  while (int64_t(out.size()) < n) {
    if (rng() % 20 == 0) out.push_back(1);
    const auto& w = words[rng() % words.size()];
    out.insert(out.end(), w.begin(), w.end());
    out.push_back(uint16_t(2 + rng() % 3));
  }
  out.resize(n);
  return out;
}

// train_000.bin and val_000.bin in `dir`.
inline void WriteShards(const TempDir& dir, int64_t train_tokens = 60000,
                        int64_t val_tokens = 4000) {
  (void)WriteShard(dir.File("train_000.bin"), SyntheticTokens(train_tokens, 1));
  (void)WriteShard(dir.File("val_000.bin"), SyntheticTokens(val_tokens, 2));
}

// 2 layers of d 16 (2 heads × 8), vocab 64, 16-token sequences, 4 micro-batches of 2 per step.
inline nlohmann::json TinyTrainConfig(const nlohmann::json& overrides = nlohmann::json::object()) {
  nlohmann::json c = {{"n_layer", 2},
                      {"model_dim", 16},
                      {"n_head", 2},
                      {"head_dim", 8},
                      {"vocab_size", 64},
                      {"bos_token", 1},
                      {"seq_len", 16},
                      {"device_batch_tokens", 32},
                      {"batch_tokens", 128},
                      {"num_iterations", 6},
                      {"warmdown_iters", 2},
                      {"val_tokens", 512},
                      {"val_every", 3},
                      {"untimed_steps", 1},
                      {"target_val_loss", 4.0},
                      {"adam.head_lr", 0.02},
                      {"muon.momentum_warmup_steps", 4}};
  c.update(overrides);
  return *CanonicalizeConfig(c);
}

// TinyTrainConfig at a shape the GPU kernels' tiled paths take (head_dim 64, 64-token
// sequences, 4 layers of d 64) and a 256-token step of 2 micro-batches, then `overrides`.
inline nlohmann::json SmallGpuTrainConfig(
    const nlohmann::json& overrides = nlohmann::json::object()) {
  nlohmann::json c = {{"n_layer", 4},        {"model_dim", 64},   {"n_head", 1},
                      {"head_dim", 64},      {"seq_len", 64},     {"device_batch_tokens", 128},
                      {"batch_tokens", 256}, {"val_tokens", 1024}};
  c.update(overrides);
  return TinyTrainConfig(c);
}

// Train() on the shards of `dir` (WriteShards) with options `o`; the run must end ok. Returns
// its events.
inline std::vector<nlohmann::json> TrainEvents(const nlohmann::json& config, TrainOptions o,
                                               const TempDir& dir) {
  o.train_files = {dir.File("train_000.bin")};
  o.val_files = {dir.File("val_000.bin")};
  MemorySink sink;
  TrainOutcome out = Train(config, o, sink);
  EXPECT_EQ(out.status, TrainStatus::kOk) << out.message;
  return sink.events();
}

// The train and validation losses, in event order.
inline std::vector<double> Losses(const std::vector<nlohmann::json>& events) {
  std::vector<double> out;
  for (const nlohmann::json& e : events) {
    if (e["event"] == "step") out.push_back(e["train_loss"]);
    if (e["event"] == "val") out.push_back(e["val_loss"]);
  }
  return out;
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_TRAINER_TRAIN_FIXTURE_H_
