// `ablate presets`: the record presets compiled into this binary (no server needed).
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "trainer/config/presets.h"

namespace ablate {
namespace {

using nlohmann::json;

}  // namespace

int PresetsCommand(bool as_json, const std::string& name, const std::string& scale_name) {
  Result<Scale> scale = ParseScale(scale_name);
  if (!scale.ok()) {
    std::cerr << "ablate: " << scale.error().message << "\n";
    return kExitUsage;
  }
  if (!name.empty()) {
    Result<json> config = PresetConfig(name, *scale);
    if (!config.ok()) {
      std::cerr << "ablate: " << config.error().message << "\n";
      return kExitNotFound;
    }
    std::cout << (as_json ? config->dump() : config->dump(2)) << "\n";
    return kExitOk;
  }
  json all = json::array();
  Table t({"PRESET", "RECORD", "DATASET", "WHAT IT ADDS"});
  for (const Preset& p : AllPresets()) {
    all.push_back({{"name", p.name},
                   {"record", p.record},
                   {"doc", p.doc},
                   {"dataset", p.dataset},
                   {"config", *PresetConfig(p.name, *scale)}});
    t.AddRow(
        {std::string(p.name), std::string(p.record), std::string(p.dataset), std::string(p.doc)});
  }
  if (as_json) {
    std::cout << all.dump() << "\n";
  } else {
    t.Print(std::cout);
    std::cout << "\nscales: full, small, tiny. Show one: ablate presets r20-sub3min --scale tiny\n";
  }
  return kExitOk;
}

}  // namespace ablate
