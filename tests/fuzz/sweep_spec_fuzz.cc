// Fuzz target: the sweep spec (prescan, YAML, knob values, expansion) as `ablate submit` sends it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/sweep/sweep_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ablate::ParseSweepSpec(text, "fuzz.yaml").status().IgnoreError();
  return 0;
}
