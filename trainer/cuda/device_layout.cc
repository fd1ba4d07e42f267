// Padded device layout. Tensors are few (≈ 100), so lookups are binary searches over them.
#include "trainer/cuda/device_layout.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ablate::cuda {

namespace {

int64_t AlignUp(int64_t n) {
  return (n + DeviceLayout::kAlign - 1) / DeviceLayout::kAlign * DeviceLayout::kAlign;
}

// Separate k and v weights must follow q with no gap: the forward runs one (3d, d) product over
// q, k and v (param_layout.cc keeps them adjacent for this).
bool ContinuesPrevious(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with("attn.k.weight") || ends_with("attn.v.weight");
}

}  // namespace

DeviceLayout::DeviceLayout(const ParamLayout& host) : host_(host) {
  int64_t cursor = 0;  // end of the previous tensor
  for (const ParamInfo& p : host_.params()) {
    int64_t start = ContinuesPrevious(p.name) ? cursor : AlignUp(cursor);
    device_offsets_.push_back(start);
    cursor = start + p.numel;
  }
  total_ = AlignUp(cursor);
}

int64_t DeviceLayout::Map(int64_t host_offset) const {
  const std::vector<ParamInfo>& ps = host_.params();
  // The last tensor starting at or before host_offset.
  auto it = std::upper_bound(ps.begin(), ps.end(), host_offset,
                             [](int64_t off, const ParamInfo& p) { return off < p.offset; });
  if (it == ps.begin()) std::abort();  // a programming error: offsets come from the layout
  size_t i = size_t(it - ps.begin()) - 1;
  return device_offsets_[i] + (host_offset - ps[i].offset);
}

std::vector<int64_t> DeviceLayout::BlockStarts(int64_t n_layer) const {
  std::vector<int64_t> starts(size_t(n_layer) + 1, total_);
  for (int64_t i = n_layer - 1; i >= 0; --i) {
    std::string prefix = "blocks." + std::to_string(i) + ".";
    starts[size_t(i)] = starts[size_t(i) + 1];  // a block without tensors: an empty range
    for (size_t k = 0; k < host_.params().size(); ++k) {
      if (host_.params()[k].name.rfind(prefix, 0) == 0) {
        starts[size_t(i)] = device_offsets_[k];
        break;
      }
    }
  }
  return starts;
}

Status DeviceLayout::Upload(CudaContext& ctx, float* device, const float* host) const {
  const std::vector<ParamInfo>& ps = host_.params();
  for (size_t i = 0; i < ps.size(); ++i) {
    ABLATE_RETURN_IF_ERROR(ctx.ToDevice(device + device_offsets_[i], host + ps[i].offset,
                                        ps[i].numel * int64_t(sizeof(float))));
  }
  return ctx.Synchronize();  // the host buffer may be freed once this returns
}

Status DeviceLayout::Download(CudaContext& ctx, float* host, const float* device) const {
  const std::vector<ParamInfo>& ps = host_.params();
  for (size_t i = 0; i < ps.size(); ++i) {
    ABLATE_RETURN_IF_ERROR(ctx.ToHost(host + ps[i].offset, device + device_offsets_[i],
                                      ps[i].numel * int64_t(sizeof(float))));
  }
  return {};
}

}  // namespace ablate::cuda
