// Fuzz target: a record log as `ablate import` and `ablate verify-record` read it
// (common/record_log.h). Besides the sanitizers, it checks what the reader promises of a log it
// accepts: points in file order with steps that never go back, a final validation at the last
// point's step with finite values, timed steps that exist, and a script that is part of the input.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/record_log.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();  // libFuzzer reports it as a crash, with the input
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ablate::RecordLog> log = ablate::ParseRecordLog(text, "fuzz.txt");
  if (!log.ok()) {
    Check(std::string_view(log.status().message().data(), log.status().message().size())
              .starts_with("fuzz.txt"));
    return 0;
  }
  Check(!log->points.empty());
  Check(log->script.size() <= text.size());
  Check(text.find(log->script) != std::string_view::npos);
  int64_t last = -1;
  int line = 0;
  for (const ablate::RecordLogPoint& p : log->points) {
    Check(p.step >= last && p.line > line && p.step <= log->total_steps);
    if (p.val_loss) Check(std::isfinite(*p.val_loss));
    if (p.train_time_ms) Check(std::isfinite(*p.train_time_ms) && *p.train_time_ms >= 0);
    last = p.step, line = p.line;
  }
  // Nothing may follow the final validation: it is the last step line.
  Check(log->final_step == log->points.back().step && log->points.back().val_loss.has_value());
  Check(*log->points.back().val_loss == log->final_val_loss);
  Check(std::isfinite(log->final_val_loss) && std::isfinite(log->final_train_time_ms));
  Check(log->timed_from_step >= 0 && log->timed_from_step <= log->final_step);
  Check(std::isfinite(log->mean_step_ms()));
  return 0;
}
