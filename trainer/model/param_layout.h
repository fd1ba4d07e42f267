// The model's parameters by name (MODEL.md "Parameters"): shapes, optimizer groups and their
// place in one flat buffer. The names are the contract with the PyTorch reference and the
// parity-state format.
#ifndef ABLATE_TRAINER_MODEL_PARAM_LAYOUT_H_
#define ABLATE_TRAINER_MODEL_PARAM_LAYOUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/model/model_config.h"

namespace ablate {

enum class ParamGroup { kMuon, kAdamEmbed, kAdamHead, kAdamScalar };

std::string_view ParamGroupName(ParamGroup g);

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  ParamGroup group;
  int64_t offset = 0;  // in elements, into the flat buffer
  int64_t numel = 0;
  bool bf16 = false;  // stored in bf16 (ModelConfig::storage): values are bf16-representable
};

class ParamLayout {
 public:
  explicit ParamLayout(const ModelConfig& m);

  const std::vector<ParamInfo>& params() const { return params_; }
  // nullptr when absent.
  const ParamInfo* Find(std::string_view name) const;
  // True when some parameter is stored in bf16.
  bool AnyBf16() const;
  // REQUIRES: present. Offset of `name`.
  int64_t Offset(std::string_view name) const;
  int64_t total() const { return total_; }

 private:
  void Add(std::string name, std::vector<int64_t> shape, ParamGroup group);
  // Marks the params of the groups ModelConfig::storage puts in bf16.
  void MarkStorage(const ParamStorage& storage);
  void AddBlock(const ModelConfig& m, int64_t i);

  std::vector<ParamInfo> params_;
  int64_t total_ = 0;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_MODEL_PARAM_LAYOUT_H_
