// Fuzz target: a dataset's manifest.json as the worker and ablate-data read it.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "trainer/data/dataset_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  auto manifest = ablate::ParseManifest(doc);
  if (manifest.ok()) ablate::ManifestJson(*manifest).dump();
  return 0;
}
