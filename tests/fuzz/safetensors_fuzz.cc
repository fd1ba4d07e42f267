// Fuzz target: the safetensors reader behind `ablate-train --init-from` (trainer/weights/). The
// input is a whole file: ParseSafetensors checks its header length, JSON header and each entry's
// dtype, shape and offsets; then LoadWeights matches the tensors against two small configs (the
// r8 names and r20's merged-qkv names), as --init-from does. Besides the sanitizers, it checks
// what the parser promises: every accepted tensor lies inside the data section with exactly
// numel x dtype bytes, Find finds it, and writing the parsed file again with our writer
// (SerializeSafetensors) reads back to the same tensors, bytes and metadata.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config/presets.h"
#include "trainer/model/model_config.h"
#include "trainer/model/param_layout.h"
#include "trainer/weights/safetensors.h"
#include "trainer/weights/weights_file.h"

namespace {

using ablate::SafetensorsView;
using ablate::TensorEntry;

void Check(bool ok) {
  if (!ok) std::abort();  // libFuzzer reports it as a crash, with the input
}

// A record preset at the tiny scale, shrunk further so that a whole valid file (a few KB) fits
// in the fuzzer's inputs: tests/fuzz/corpus/safetensors/ holds one for each.
ablate::ModelConfig SmallConfig(const char* preset) {
  nlohmann::json c = *ablate::PresetConfig(preset, ablate::Scale::kTiny);
  c["model_dim"] = 8;
  c["n_head"] = 1;
  c["head_dim"] = 8;
  c["vocab_size"] = 16;
  c["embed_vocab_size"] = 0;
  return *ablate::ModelConfig::FromCanonical(c);
}

struct Target {
  ablate::ModelConfig model;
  ablate::ParamLayout layout;
  explicit Target(const char* preset) : model(SmallConfig(preset)), layout(model) {}
};

const std::vector<Target>& Targets() {
  static const std::vector<Target>* targets =
      new std::vector<Target>{Target("r8-untied"), Target("r20-sub3min")};
  return *targets;
}

void CheckEntries(const SafetensorsView& v) {
  for (const TensorEntry& t : v.tensors) {
    Check(t.begin >= 0 && t.begin <= t.end && t.end <= int64_t(v.data.size()));
    Check(t.end - t.begin == t.numel() * ablate::TensorDtypeBytes(t.dtype));
    Check(v.Find(t.name) == &t);
  }
}

// Our writer's file for the parsed tensors reads back to the same ones.
void CheckRoundTrip(const SafetensorsView& v) {
  std::vector<ablate::TensorToWrite> out;
  for (const TensorEntry& t : v.tensors) {
    std::string_view bytes = v.Bytes(t);
    out.push_back({t.name, t.dtype, t.shape, bytes.data(), int64_t(bytes.size()), nullptr});
  }
  std::string again = ablate::SerializeSafetensors(out, v.metadata);
  ablate::Result<SafetensorsView> back = ablate::ParseSafetensors(again);
  Check(back.ok());
  Check(back->metadata == v.metadata && back->tensors.size() == v.tensors.size());
  for (size_t i = 0; i < v.tensors.size(); ++i) {
    const TensorEntry &a = v.tensors[i], &b = back->tensors[i];
    Check(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape);
    Check(v.Bytes(a) == back->Bytes(b));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ablate::Result<SafetensorsView> view = ablate::ParseSafetensors(bytes);
  if (!view.ok()) return 0;
  CheckEntries(*view);
  CheckRoundTrip(*view);
  for (const Target& t : Targets()) {
    std::vector<float> params(size_t(t.layout.total()));
    (void)ablate::LoadWeights(*view, t.model, t.layout, params.data()).ok();
  }
  return 0;
}
