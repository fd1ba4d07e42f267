// `ablate knobs`: every trainer knob compiled into this binary (no server needed).
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "trainer/config/knob_schema.h"

namespace ablate {
namespace {

using nlohmann::json;

}  // namespace

int KnobsCommand(bool as_json) {
  json all = json::array();
  Table t({"KNOB", "TYPE", "DEFAULT", "RANGE", "MEANING"});
  for (const KnobSpec& k : AllKnobs()) {
    std::string range;
    if (k.type == KnobType::kChoice) {
      for (std::string_view ch : k.choices) range += (range.empty() ? "" : "|") + std::string(ch);
    } else if (k.type != KnobType::kBool) {
      range = "[" + json(k.min).dump() + ", " + json(k.max).dump() + "]";
    }
    all.push_back({{"name", k.name},
                   {"type", KnobTypeName(k.type)},
                   {"default", k.default_value},
                   {"doc", k.doc}});
    t.AddRow({std::string(k.name), std::string(KnobTypeName(k.type)), k.default_value.dump(),
              range.empty() ? "-" : range, std::string(k.doc)});
  }
  if (as_json) {
    std::cout << all.dump() << "\n";
  } else {
    t.Print(std::cout);
  }
  return kExitOk;
}

}  // namespace ablate
