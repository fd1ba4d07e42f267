// Fuzz target: the trainer's JSON-lines events as the worker reads them from a child's stdout,
// with the metric point and the run summary built from each.
#include <cstddef>
#include <cstdint>
#include <string>

#include "worker/trainer_events.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string line(reinterpret_cast<const char*>(data), size);
  std::optional<ablate::worker::TrainerEvent> event = ablate::worker::ParseTrainerEvent(line);
  if (!event) return 0;
  ablate::worker::PointFromEvent(*event);
  ablate::worker::SummaryFromEnd(event->body, 10);
  return 0;
}
