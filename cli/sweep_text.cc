// Seeds and dispatch order in words; see sweep_text.h.
#include "cli/sweep_text.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

namespace ablate {
namespace {

using nlohmann::json;

// The script object of the baseline variant's config (else of the first variant's), or null.
json BaselineScript(const v1::Sweep& sw) {
  const v1::Variant* chosen = nullptr;
  for (const v1::Variant& v : sw.variants()) {
    if (v.name() == "baseline" || chosen == nullptr) chosen = &v;
    if (v.name() == "baseline") break;
  }
  if (chosen == nullptr) return nullptr;
  json config = json::parse(chosen->config_json(), nullptr, false);
  if (!config.is_object() || !config.contains("script") || !config["script"].is_object()) {
    return nullptr;
  }
  return config["script"];
}

std::string ScriptText(const json& s) {
  std::string text = "script " + s.value("path", std::string("?")) + "@" +
                     s.value("snapshot", std::string()).substr(0, 12) + " (launch " +
                     s.value("launch", std::string("python"));
  if (s.contains("args") && s["args"].is_array() && !s["args"].empty()) {
    std::string args;
    for (const json& a : s["args"]) args += (args.empty() ? "" : " ") + a.get<std::string>();
    text += ", args " + args;
  }
  return text + ")";
}

}  // namespace

std::string BaselineText(const v1::Sweep& sw) {
  const std::string dataset = ", dataset " + (sw.dataset().empty() ? "none" : sw.dataset());
  if (json script = BaselineScript(sw); !script.is_null()) return ScriptText(script) + dataset;
  return (sw.baseline_preset().empty() ? "(defaults)" : sw.baseline_preset()) + " at scale " +
         sw.scale() + dataset;
}

std::string SeedsText(const v1::Sweep& sw) {
  if (sw.seeds_min() > 0) {
    return std::to_string(sw.seeds_min()) + " to " + std::to_string(sw.seeds()) +
           " seeds (sequential)";
  }
  return std::to_string(sw.seeds()) + (sw.seeds() == 1 ? " seed" : " seeds");
}

void PrintRunOrder(const v1::Sweep& sw, std::ostream& out) {
  if (sw.dispatch_blocks().empty()) return;
  out << "run order: block k = seed k of every variant, shuffled per block (order seed "
      << sw.order_seed() << "); blocks go out in order\n";
  int shown = 0;
  for (const v1::DispatchBlock& b : sw.dispatch_blocks()) {
    if (shown++ == kMaxBlocksShown) {
      out << "  ... " << sw.dispatch_blocks_size() - kMaxBlocksShown << " more blocks\n";
      break;
    }
    out << "  block " << b.block() << ":";
    for (const std::string& v : b.variants()) out << " " << v;
    out << "\n";
  }
}

namespace {

// ms as the spec writes it: 600000 -> "10m", 90000 -> "90s", 1500 -> "1500ms".
std::string DurationText(int64_t ms) {
  for (auto [unit, size] : {std::pair{"h", int64_t{3600000}}, std::pair{"m", int64_t{60000}},
                            std::pair{"s", int64_t{1000}}}) {
    if (ms % size == 0) return std::to_string(ms / size) + unit;
  }
  return std::to_string(ms) + "ms";
}

}  // namespace

void PrintCheckpoints(const v1::Sweep& sw, std::ostream& out) {
  if (sw.checkpoint_every_ms() <= 0) return;
  out << "checkpoints: every " << DurationText(sw.checkpoint_every_ms())
      << " (wall time), into each worker's --checkpoint-dir (workers without one run without "
         "them); a requeued run resumes from its newest checkpoint\n";
}

}  // namespace ablate
