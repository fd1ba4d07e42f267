// Weights in and out, checkpoints and resume: the safetensors reader on good and bad bytes,
// record names, bit-exact CPU resume (20 steps straight == 10, stop, resume 10: losses and
// weights), time-based checkpoints, skipping unreadable checkpoints, and ablate-train's exit 2
// naming the tensor for every kind of bad --init-from file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/trainer/train_fixture.h"
#include "trainer/config/presets.h"
#include "trainer/model/bf16.h"
#include "trainer/model/param_layout.h"
#include "trainer/weights/checkpoint.h"
#include "trainer/weights/safetensors.h"
#include "trainer/weights/weights_file.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;
using testing::TempDir;

std::string ReadAll(const std::string& path) { return *ReadFileBytes(path); }

void WriteAll(const std::string& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

TensorToWrite F32(std::string name, std::vector<int64_t> shape, float fill) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(size_t(n), fill);
  return OwnedTensor(std::move(name), TensorDtype::kF32, std::move(shape),
                     std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
}

TEST(Safetensors, RoundTripAndMetadata) {
  std::string bytes =
      SerializeSafetensors({F32("b", {2, 3}, 1.5f), F32("a", {}, -2.f)}, {{"format", "pt"}});
  Result<SafetensorsView> v = ParseSafetensors(bytes);
  ASSERT_TRUE(v.ok()) << v.error().message;
  ASSERT_EQ(v->tensors.size(), 2u);
  EXPECT_EQ(v->metadata.at("format"), "pt");
  const TensorEntry* b = v->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{2, 3}));
  float x;
  std::memcpy(&x, v->Bytes(*b).data() + 20, 4);
  EXPECT_EQ(x, 1.5f);
  EXPECT_EQ(v->Find("a")->shape.size(), 0u);
  EXPECT_EQ((8 + (bytes.size() - 8 - 6 * 4 - 4)) % 8, 0u);  // data section aligned
}

TEST(Safetensors, BadBytesAreErrorsNamingTheTensor) {
  std::string good = SerializeSafetensors({F32("w", {4}, 1.f), F32("z", {2}, 0.f)}, {});
  auto error = [](std::string_view bytes) {
    Result<SafetensorsView> v = ParseSafetensors(bytes);
    return v.ok() ? std::string("ok") : v.error().message;
  };
  EXPECT_NE(error(good.substr(0, 5)).find("truncated"), std::string::npos);
  EXPECT_NE(error(good.substr(0, 20)).find("truncated"), std::string::npos);
  std::string cut = error(good.substr(0, good.size() - 3));
  EXPECT_NE(cut.find("tensor 'z'"), std::string::npos) << cut;
  EXPECT_NE(cut.find("truncated"), std::string::npos) << cut;
  std::string huge = good;
  huge[7] = char(0x7f);  // header length beyond the file
  EXPECT_NE(error(huge).find("truncated"), std::string::npos);
  auto with_header = [](const std::string& json, size_t data) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[size_t(i)] = char((json.size() >> (8 * i)) & 0xff);
    return out + json + std::string(data, '\0');
  };
  EXPECT_NE(error(with_header("[1]", 0)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error(with_header(R"({"q":{"dtype":"X9","shape":[1],"data_offsets":[0,4]}})", 4))
                .find("tensor 'q': unknown dtype X9"),
            std::string::npos);
  EXPECT_NE(error(with_header(R"({"q":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8))
                .find("tensor 'q'"),
            std::string::npos);
  EXPECT_NE(error(with_header(R"({"q":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4))
                .find("tensor 'q'"),
            std::string::npos);
  EXPECT_NE(error(with_header(R"({"p":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("q":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                              8))
                .find("overlaps"),
            std::string::npos);
}

TEST(Bf16, RoundsToNearestEvenLikeTorch) {
  EXPECT_EQ(RoundToBf16(1.0f), 1.0f);
  EXPECT_EQ(RoundToBf16(1.00390625f), 1.0f);       // exactly half an ulp: ties to even
  EXPECT_EQ(RoundToBf16(1.01171875f), 1.015625f);  // 1.5 ulp: ties to even (up)
  EXPECT_EQ(RoundToBf16(1.0040f), 1.0078125f);     // above half: up
  EXPECT_TRUE(std::isnan(RoundToBf16(std::nanf(""))));
}

TEST(RecordNames, EachRecordsNames) {
  J r8 = *PresetConfig("r8-untied", Scale::kTiny);
  J r11 = *PresetConfig("r11-unet", Scale::kTiny);
  J r18 = *PresetConfig("r18-softcap15", Scale::kTiny);
  J r20 = *PresetConfig("r20-sub3min", Scale::kTiny);
  auto names = [](const J& c) {
    ModelConfig m = *ModelConfig::FromCanonical(c);
    ParamLayout layout(m);
    std::vector<float> params(size_t(layout.total()), 0.f);
    std::map<std::string, std::string> dtypes;
    for (const TensorToWrite& t : WeightTensors(m, layout, params.data())) {
      dtypes[t.name] = std::string(TensorDtypeName(t.dtype));
    }
    return dtypes;
  };
  auto n8 = names(r8), n11 = names(r11), n18 = names(r18), n20 = names(r20);
  EXPECT_EQ(n8.count("transformer.wte.weight"), 1u);
  EXPECT_EQ(n8.count("transformer.h.0.attn.c_q.weight"), 1u);
  EXPECT_EQ(n8.count("transformer.h.5.mlp.c_proj.weight"), 1u);
  EXPECT_EQ(n8.count("lm_head.weight"), 1u);
  EXPECT_EQ(n11.at("skip_weights"), "BF16");  // r11: model.bfloat16()
  EXPECT_EQ(n11.at("transformer.h.0.lambdas"), "BF16");
  EXPECT_EQ(n11.at("transformer.h.0.attn.lamb"), "BF16");
  EXPECT_EQ(n11.at("transformer.wte.weight"), "BF16");
  EXPECT_EQ(n11.at("lm_head.weight"), "F32");
  EXPECT_EQ(n18.at("embed.weight"), "BF16");
  EXPECT_EQ(n18.at("value_embeds.embed.1.weight"), "BF16");
  EXPECT_EQ(n18.at("blocks.0.attn.lambdas"), "F32");
  EXPECT_EQ(n18.count("blocks.3.attn.c_q.weight"), 0u);  // tiny r18 skips layer 3's attention
  EXPECT_EQ(n18.count("blocks.2.attn.c_v.weight"), 1u);
  EXPECT_EQ(n20.count("blocks.0.attn.qkv_w"), 1u);
  // r20's ValueEmbedding module, as r18's: value_embeds.embed.{k}.weight (the record's names).
  EXPECT_EQ(n20.at("value_embeds.embed.1.weight"), "BF16");
  EXPECT_EQ(n20.count("value_embeds.1.weight"), 0u);
}

// ---- Resume --------------------------------------------------------------------------------

J ResumeConfig() {
  return testing::TinyTrainConfig({{"num_iterations", 20},
                                   {"warmdown_iters", 6},
                                   {"val_every", 5},
                                   {"muon.momentum_warmup_steps", 8},
                                   {"muon.momentum_form", "lerp"},
                                   {"param_dtype.embed", "bf16"},
                                   {"embed_shortcut", true},
                                   {"unet_skips", true}});
}

std::vector<J> Only(const std::vector<J>& events, const std::string& kind) {
  std::vector<J> out;
  for (const J& e : events) {
    if (e["event"] == kind) out.push_back(e);
  }
  return out;
}

struct Runs {
  std::vector<J> straight, first, resumed;
};

Runs StraightAndResumed(const TempDir& dir, TrainOptions o) {
  Runs r;
  J c = ResumeConfig();
  TrainOptions a = o;
  a.save_path = dir.File("straight.safetensors");
  r.straight = testing::TrainEvents(c, a, dir);
  TrainOptions b1 = o;
  b1.max_steps = 10;
  b1.checkpoint_dir = dir.File("ckpt");
  r.first = testing::TrainEvents(c, b1, dir);
  TrainOptions b2 = o;
  b2.resume_dir = dir.File("ckpt");
  b2.save_path = dir.File("resumed.safetensors");
  r.resumed = testing::TrainEvents(c, b2, dir);
  return r;
}

void ExpectBitExact(const Runs& r, const TempDir& dir) {
  std::vector<J> steps = Only(r.straight, "step"), first = Only(r.first, "step"),
                 resumed = Only(r.resumed, "step");
  ASSERT_EQ(steps.size(), 20u);
  ASSERT_EQ(first.size(), 10u);
  ASSERT_EQ(resumed.size(), 10u);  // no step repeated or missing
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(first[i]["train_loss"].get<double>(), steps[i]["train_loss"].get<double>()) << i;
    EXPECT_EQ(resumed[i]["step"], steps[10 + i]["step"]);
    EXPECT_EQ(resumed[i]["train_loss"].get<double>(), steps[10 + i]["train_loss"].get<double>())
        << "step " << 11 + i;
  }
  // Validation at 10 ran once (in the first attempt); 15 and 20 in the resumed one, equal.
  std::vector<J> val = Only(r.straight, "val"), val_resumed = Only(r.resumed, "val");
  ASSERT_EQ(val_resumed.size(), 2u);
  EXPECT_EQ(val_resumed[0]["step"], 15);
  EXPECT_EQ(val_resumed[1]["val_loss"].get<double>(), val.back()["val_loss"].get<double>());
  // The weights, byte for byte.
  EXPECT_EQ(ReadAll(dir.File("straight.safetensors")), ReadAll(dir.File("resumed.safetensors")));
  // The resumed run says where it came from and sums the attempts' timed steps.
  J start = Only(r.resumed, "start")[0];
  EXPECT_EQ(start["resumed_from"]["step"], 10);
  double first_ms = Only(r.first, "end")[0]["train_ms"];
  EXPECT_EQ(start["resumed_from"]["train_ms"].get<double>(), first_ms);
  EXPECT_GE(Only(r.resumed, "end")[0]["train_ms"].get<double>(), first_ms);
  EXPECT_EQ(Only(r.resumed, "end")[0]["steps"], 20);
}

TEST(Resume, CpuStoppedAtTenAndResumedEqualsStraightBitForBit) {
  TempDir dir;
  testing::WriteShards(dir);
  ExpectBitExact(StraightAndResumed(dir, TrainOptions{}), dir);
}

TEST(Resume, TwoRanksPipelinedBitForBit) {
  TempDir dir;
  testing::WriteShards(dir);
  TrainOptions o;
  o.world_size = 2;  // each rank owns half of Muon's momenta
  o.threads = 2;
  o.steps_in_flight = 1;
  ExpectBitExact(StraightAndResumed(dir, o), dir);
}

TEST(Resume, TimedCheckpointsKeepTheTwoNewestAndSkipUnreadableOnes) {
  TempDir dir;
  testing::WriteShards(dir);
  J c = ResumeConfig();
  TrainOptions o;
  o.max_steps = 12;
  o.checkpoint_dir = dir.File("ckpt");
  o.checkpoint_every_ms = 0.001;  // due at every step boundary
  std::vector<J> events = testing::TrainEvents(c, o, dir);
  std::vector<J> ckpts = Only(events, "checkpoint");
  ASSERT_GE(ckpts.size(), 5u);
  EXPECT_GT(ckpts.back()["bytes"].get<int64_t>(), 0);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.File("ckpt"))) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
  // A newer checkpoint cut short (a writer that did not rename) and a stale temp file: the
  // newest readable one (12) is used.
  std::string newest = ReadAll(dir.File("ckpt/ckpt-00000012.safetensors"));
  WriteAll(dir.File("ckpt/ckpt-00000099.safetensors"), newest.substr(0, newest.size() / 2));
  WriteAll(dir.File("ckpt/ckpt-00000100.safetensors.tmp.123"), "junk");
  ModelConfig m = *ModelConfig::FromCanonical(c);
  std::vector<std::string> skipped;
  auto loaded = LoadNewestCheckpoint(dir.File("ckpt"), ParamLayout(m), ConfigHash(c), skipped);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->meta.steps_done, 12);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("ckpt-00000099"), std::string::npos);
  // Another config's directory is refused.
  J other = testing::TinyTrainConfig({{"num_iterations", 21}});
  auto refused = LoadNewestCheckpoint(dir.File("ckpt"), ParamLayout(m), ConfigHash(other), skipped);
  EXPECT_FALSE(refused.ok());
}

TEST(Resume, NoCheckpointStartsAtStepZero) {
  TempDir dir;
  testing::WriteShards(dir);
  TrainOptions o;
  o.resume_dir = dir.File("empty");
  o.max_steps = 2;
  std::vector<J> events = testing::TrainEvents(ResumeConfig(), o, dir);
  EXPECT_TRUE(Only(events, "start")[0]["resumed_from"].is_null());
  EXPECT_EQ(Only(events, "step")[0]["step"], 1);
}

TEST(Weights, SaveThenInitFromGivesTheSameValidationLoss) {
  TempDir dir;
  testing::WriteShards(dir);
  J c = ResumeConfig();
  TrainOptions a;
  a.max_steps = 6;
  a.save_path = dir.File("w.safetensors");
  std::vector<J> trained = testing::TrainEvents(c, a, dir);
  TrainOptions b;
  b.max_steps = 0;
  b.init_from = dir.File("w.safetensors");
  std::vector<J> loaded = testing::TrainEvents(c, b, dir);
  EXPECT_EQ(Only(loaded, "val")[0]["val_loss"].get<double>(),
            Only(trained, "val").back()["val_loss"].get<double>());
  EXPECT_EQ(Only(loaded, "start")[0]["init_from"], dir.File("w.safetensors"));
}

// ---- ablate-train --init-from with bad files: exit 2, the tensor named --------------------

struct Exit {
  int code = -1;
  std::string out;
};

Exit RunTrain(const std::vector<std::string>& args) {
  std::string cmd = ABLATE_TRAIN_BIN;
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  Exit e;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) e.out.append(buf, n);
  int status = pclose(p);
  e.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return e;
}

TEST(Weights, AblateTrainRejectsEveryBadFileNamingTheTensor) {
  TempDir dir;
  testing::WriteShards(dir);
  J c = ResumeConfig();
  std::ofstream(dir.File("run.json")) << c.dump();
  ModelConfig m = *ModelConfig::FromCanonical(c);
  ParamLayout layout(m);
  std::vector<float> params(size_t(layout.total()), 0.25f);
  std::vector<TensorToWrite> good = WeightTensors(m, layout, params.data());
  auto attempt = [&](const std::vector<TensorToWrite>& tensors, std::string_view cut = {}) {
    std::string bytes = SerializeSafetensors(tensors, {});
    if (!cut.empty()) bytes = bytes.substr(0, bytes.size() - 10);
    WriteAll(dir.File("bad.safetensors"), bytes);
    return RunTrain({"--config", dir.File("run.json"), "--train", dir.File("train_*.bin"), "--val",
                     dir.File("val_*.bin"), "--threads", "1", "--max-steps", "0", "--init-from",
                     dir.File("bad.safetensors")});
  };
  Exit ok = attempt(good);
  EXPECT_EQ(ok.code, 0) << ok.out;
  const std::string head = "lm_head.weight";
  {  // missing
    std::vector<TensorToWrite> t = good;
    std::erase_if(t, [&](const TensorToWrite& x) { return x.name == head; });
    Exit e = attempt(t);
    EXPECT_EQ(e.code, 2);
    EXPECT_NE(e.out.find("tensor 'lm_head.weight': missing"), std::string::npos) << e.out;
  }
  {  // extra
    std::vector<TensorToWrite> t = good;
    t.push_back(F32("transformer.h.9.attn.c_q.weight", {16, 16}, 0.f));
    Exit e = attempt(t);
    EXPECT_EQ(e.code, 2);
    EXPECT_NE(e.out.find("tensor 'transformer.h.9.attn.c_q.weight': not a parameter"),
              std::string::npos)
        << e.out;
  }
  {  // wrong shape
    std::vector<TensorToWrite> t = good;
    for (TensorToWrite& x : t) {
      if (x.name == head) x = F32(head, {32, 16}, 0.f);
    }
    Exit e = attempt(t);
    EXPECT_EQ(e.code, 2);
    EXPECT_NE(e.out.find("tensor 'lm_head.weight': shape (32, 16), expected (64, 16)"),
              std::string::npos)
        << e.out;
  }
  {  // wrong dtype
    std::vector<TensorToWrite> t = good;
    for (TensorToWrite& x : t) {
      if (x.name == head) x.dtype = TensorDtype::kI32;
    }
    Exit e = attempt(t);
    EXPECT_EQ(e.code, 2);
    EXPECT_NE(e.out.find("tensor 'lm_head.weight': dtype I32"), std::string::npos) << e.out;
  }
  {  // truncated: the last tensor's data is cut
    Exit e = attempt(good, "cut");
    EXPECT_EQ(e.code, 2);
    EXPECT_NE(e.out.find("tensor '" + good.back().name + "': truncated"), std::string::npos)
        << e.out;
  }
}

}  // namespace
}  // namespace ablate
