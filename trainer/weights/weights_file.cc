// Record names and the conversion between the flat parameter buffer and safetensors tensors.
#include "trainer/weights/weights_file.h"

#include <cstring>
#include <set>

#include "trainer/model/bf16.h"

namespace ablate {
namespace {

// (ablate suffix within a block, record suffix) for the names that differ in every naming.
struct Rename {
  const char* ablate;
  const char* record;
};
constexpr Rename kBlockRenames[] = {
    {"attn.q.weight", "attn.c_q.weight"},     {"attn.k.weight", "attn.c_k.weight"},
    {"attn.v.weight", "attn.c_v.weight"},     {"attn.proj.weight", "attn.c_proj.weight"},
    {"attn.qkv.weight", "attn.qkv_w"},        {"attn.value_lambda", "attn.lamb"},
    {"attn.ve_lambdas", "attn.lambdas"},      {"mlp.fc.weight", "mlp.c_fc.weight"},
    {"mlp.proj.weight", "mlp.c_proj.weight"}, {"lambdas", "lambdas"},
};

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string BlockName(std::string_view name, RecordNaming naming) {
  // name = "blocks.{i}.{rest}"
  size_t dot = name.find('.', 7);
  std::string index(name.substr(7, dot - 7));
  std::string_view rest = name.substr(dot + 1);
  std::string prefix = naming == RecordNaming::kTransformer ? "transformer.h." + index + "."
                                                            : "blocks." + index + ".";
  for (const Rename& r : kBlockRenames) {
    if (rest == r.ablate) return prefix + r.record;
  }
  return prefix + std::string(rest);
}

std::string RecordName(std::string_view name, RecordNaming naming) {
  if (name == "embed.weight") {
    return naming == RecordNaming::kTransformer ? "transformer.wte.weight" : "embed.weight";
  }
  // r17–r20 keep their tables in a ValueEmbedding module: value_embeds.embed.{k}.weight.
  if (StartsWith(name, "value_embeds.") && naming != RecordNaming::kTransformer) {
    return "value_embeds.embed." + std::string(name.substr(13));
  }
  if (StartsWith(name, "blocks.")) return BlockName(name, naming);
  return std::string(name);  // lm_head.weight, skip_weights
}

Error WrongTensor(const std::string& name, const std::string& what) {
  return Error{"tensor '" + name + "': " + what, name};
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

RecordNaming RecordNamingFor(const ModelConfig& m) {
  if (m.merged_qkv) return RecordNaming::kBlocksMergedQkv;
  if (m.value_embeds > 0 || !m.skip_attn_layers.empty() || m.doc_masking) {
    return RecordNaming::kBlocks;
  }
  return RecordNaming::kTransformer;
}

RecordTensor RecordTensorFor(const ParamInfo& p, RecordNaming naming) {
  RecordTensor t{RecordName(p.name, naming), p.shape};
  if (p.name.ends_with("attn.value_lambda")) t.shape = {};  // nn.Parameter(torch.tensor(0.5))
  return t;
}

std::vector<TensorToWrite> WeightTensors(const ModelConfig& m, const ParamLayout& layout,
                                         const float* params) {
  RecordNaming naming = RecordNamingFor(m);
  std::vector<TensorToWrite> out;
  for (const ParamInfo& p : layout.params()) {
    RecordTensor r = RecordTensorFor(p, naming);
    const float* src = params + p.offset;
    if (p.bf16) {
      std::string bytes(size_t(p.numel) * 2, '\0');
      for (int64_t i = 0; i < p.numel; ++i) {
        uint16_t b = Bf16Bits(src[i]);
        std::memcpy(bytes.data() + 2 * i, &b, 2);
      }
      out.push_back(OwnedTensor(r.name, TensorDtype::kBF16, r.shape, std::move(bytes)));
    } else {
      out.push_back({r.name, TensorDtype::kF32, r.shape, src, p.numel * 4, nullptr});
    }
  }
  return out;
}

Status SaveWeights(const std::string& path, const ModelConfig& m, const ParamLayout& layout,
                   const float* params, const std::map<std::string, std::string>& metadata) {
  return WriteSafetensorsFile(path, WeightTensors(m, layout, params), metadata);
}

Status LoadWeights(const SafetensorsView& file, const ModelConfig& m, const ParamLayout& layout,
                   float* params) {
  RecordNaming naming = RecordNamingFor(m);
  std::set<std::string> expected;
  for (const ParamInfo& p : layout.params()) {
    RecordTensor r = RecordTensorFor(p, naming);
    expected.insert(r.name);
    const TensorEntry* t = file.Find(r.name);
    if (t == nullptr) {
      return WrongTensor(r.name, "missing from the file (ablate's " + p.name + ", shape " +
                                     ShapeText(r.shape) + ")");
    }
    if (t->shape != r.shape) {
      return WrongTensor(r.name, "shape " + ShapeText(t->shape) + ", expected " +
                                     ShapeText(r.shape) + " for this config");
    }
    if (t->dtype != TensorDtype::kF32 && t->dtype != TensorDtype::kBF16) {
      return WrongTensor(r.name, "dtype " + t->dtype_name + ", expected F32 or BF16");
    }
    std::string_view bytes = file.Bytes(*t);
    float* dst = params + p.offset;
    if (t->dtype == TensorDtype::kF32) {
      std::memcpy(dst, bytes.data(), size_t(p.numel) * 4);
    } else {
      for (int64_t i = 0; i < p.numel; ++i) {
        uint16_t b;
        std::memcpy(&b, bytes.data() + 2 * i, 2);
        dst[i] = Bf16ToFloat(b);
      }
    }
  }
  for (const TensorEntry& t : file.tensors) {
    if (!expected.count(t.name)) {
      return WrongTensor(t.name, "not a parameter of this config (unexpected tensor)");
    }
  }
  RoundStoredParams(layout, params);
  return {};
}

Status LoadWeightsFile(const std::string& path, const ModelConfig& m, const ParamLayout& layout,
                       float* params) {
  Result<MappedFile> file = MappedFile::Open(path);
  if (!file.ok()) return file.error();
  Result<SafetensorsView> view = ParseSafetensors(file->bytes());
  Status s = view.ok() ? LoadWeights(*view, m, layout, params) : Status(view.error());
  if (!s.ok()) return Error{path + ": " + s.message(), s.error().key};
  return {};
}

}  // namespace ablate
