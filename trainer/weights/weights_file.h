// A model's weights as a safetensors file with the tensor names and shapes of the records'
// PyTorch models (`ablate-train --init-from/--save`), so that a state_dict moves between ablate
// and PyTorch with a few lines of Python (trainer/README.md "Weights in and out").
//
// Which record's names a config gets follows from its architecture (RecordNamingFor):
//   r8–r11 (GPT.transformer): transformer.wte.weight, transformer.h.{i}.attn.c_q.weight,
//     .c_k, .c_v, .c_proj, transformer.h.{i}.mlp.c_fc.weight, .c_proj, transformer.h.{i}.lambdas,
//     transformer.h.{i}.attn.lamb (shape ()), skip_weights, lm_head.weight;
//   r17–r18 (GPT.blocks): embed.weight, blocks.{i}.attn.c_q.weight, ..., blocks.{i}.attn.lambdas,
//     blocks.{i}.lambdas, value_embeds.embed.{k}.weight, skip_weights, lm_head.weight;
//   r20: as r18, with blocks.{i}.attn.qkv_w (3, d, d) (value_embeds.embed.{k}.weight as r18).
// Tensors are F32, or BF16 for the groups stored in bf16 (param_dtype.*), as the records'
// state_dicts hold them; loading accepts F32 or BF16 for any tensor.
#ifndef ABLATE_TRAINER_WEIGHTS_WEIGHTS_FILE_H_
#define ABLATE_TRAINER_WEIGHTS_WEIGHTS_FILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/model/model_config.h"
#include "trainer/model/param_layout.h"
#include "trainer/weights/safetensors.h"

namespace ablate {

enum class RecordNaming { kTransformer, kBlocks, kBlocksMergedQkv };

// r20's names when merged_qkv; r17–r18's when the config has value embeddings, skipped
// attention layers or document masking; r8–r11's otherwise.
RecordNaming RecordNamingFor(const ModelConfig& m);

// The record's name and shape of ablate's parameter p.
struct RecordTensor {
  std::string name;
  std::vector<int64_t> shape;
};
RecordTensor RecordTensorFor(const ParamInfo& p, RecordNaming naming);

// The tensors of params (layout.total()) under their record names, in layout order; F32 ones
// point into params (which must outlive them), BF16 ones own their converted bytes.
std::vector<TensorToWrite> WeightTensors(const ModelConfig& m, const ParamLayout& layout,
                                         const float* params);

// Writes the weights to `path` atomically (temporary file, then rename).
Status SaveWeights(const std::string& path, const ModelConfig& m, const ParamLayout& layout,
                   const float* params, const std::map<std::string, std::string>& metadata);

// Fills params (layout.total()) from a parsed file that must hold exactly the config's tensors:
// a missing, extra, misshapen or wrongly typed tensor is an error naming it (key = its name).
// Parameters stored in bf16 are rounded to bf16.
Status LoadWeights(const SafetensorsView& file, const ModelConfig& m, const ParamLayout& layout,
                   float* params);

// ReadFileBytes + ParseSafetensors + LoadWeights; errors start with the path.
Status LoadWeightsFile(const std::string& path, const ModelConfig& m, const ParamLayout& layout,
                       float* params);

}  // namespace ablate

#endif  // ABLATE_TRAINER_WEIGHTS_WEIGHTS_FILE_H_
