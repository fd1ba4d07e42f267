// Fuzz target: a training script's stdout as the worker reads it (worker/script_output.h). The
// input is a whole log, split at '\n' and fed line by line to one parser per log format (auto
// with a target, modded-nanogpt without one, ablate-events with one), each asked for its Summary
// and its exit verdict at the end, as a worker does when the script exits. Besides the
// sanitizers, it checks what the parser promises: a point never has a negative step and, unless
// an end event overrode them, a summary's steps never fall below a point's step and a target is
// reached only when one was given, with its time.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "worker/script_output.h"

namespace {

using ablate::worker::LogFormat;
using ablate::worker::ScriptLine;
using ablate::worker::ScriptOutputParser;

constexpr double kTarget = 3.28;

void Check(bool ok) {
  if (!ok) std::abort();  // libFuzzer reports it as a crash, with the input
}

struct Fed {
  Fed(LogFormat format, std::optional<double> target) : parser(format, target) {}
  ScriptOutputParser parser;
  int64_t max_step = 0;
  bool saw_end = false;  // an ablate end event: its fields win over what the lines said
  std::string last_error;
};

void Feed(Fed& f, std::string_view line) {
  ScriptLine out = f.parser.Parse(line);
  if (out.kind == ScriptLine::Kind::kPoint) {
    Check(out.point.step() >= 0);
    if (out.point.step() > f.max_step) f.max_step = out.point.step();
    out.point.SerializeAsString();
  } else if (out.kind == ScriptLine::Kind::kEnd) {
    f.saw_end = true;
  } else if (out.kind == ScriptLine::Kind::kError) {
    f.last_error = out.message;
  }
}

void Finish(const Fed& f, std::optional<double> target) {
  ablate::v1::RunSummary s = f.parser.Summary();
  s.SerializeAsString();
  if (!f.saw_end) {
    Check(s.steps() >= f.max_step);
    Check(!s.reached_target() || (target && s.has_time_to_target_ms()));
  }
  ablate::worker::ScriptExitFacts facts;
  facts.val_points = f.parser.val_points();
  facts.non_finite = f.parser.saw_non_finite();
  facts.last_error = f.last_error;
  ablate::worker::ClassifyScriptExit(facts);
  facts.exit_code = 1;
  ablate::worker::ClassifyScriptExit(facts);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view log(reinterpret_cast<const char*>(data), size);
  Fed fed[] = {{LogFormat::kAuto, kTarget},
               {LogFormat::kModdedNanogpt, std::nullopt},
               {LogFormat::kAblateEvents, kTarget}};
  while (!log.empty()) {
    size_t nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log = nl == std::string_view::npos ? std::string_view() : log.substr(nl + 1);
    for (Fed& f : fed) Feed(f, line);
  }
  Finish(fed[0], kTarget);
  Finish(fed[1], std::nullopt);
  Finish(fed[2], kTarget);
  // A line-level parser on its own, on the whole input as one line.
  ablate::worker::ParseNanogptLine(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
