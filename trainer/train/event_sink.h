// Where the trainer's events go (DESIGN §6.1): one JSON object per event. `ablate-train` writes
// them as JSON lines on stdout; tests collect them in memory.
#ifndef ABLATE_TRAINER_TRAIN_EVENT_SINK_H_
#define ABLATE_TRAINER_TRAIN_EVENT_SINK_H_

#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "common/thread_annotations.h"

namespace ablate {

class EventSink {
 public:
  virtual ~EventSink() = default;
  // event has an "event" field: start, step, val, end or error. Thread-safe.
  virtual void Emit(const nlohmann::json& event) = 0;
};

// One compact JSON object per line, flushed after each (a reader sees events as they happen).
class JsonLinesSink : public EventSink {
 public:
  explicit JsonLinesSink(std::ostream* out) : out_(out) {}
  void Emit(const nlohmann::json& event) override {
    AnnotatedMutexLock lock(&mu_);
    *out_ << event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    out_->flush();
  }

 private:
  AnnotatedMutex mu_;
  std::ostream* const out_ ABLATE_PT_GUARDED_BY(mu_);
};

// Keeps every event (tests).
class MemorySink : public EventSink {
 public:
  void Emit(const nlohmann::json& event) override {
    AnnotatedMutexLock lock(&mu_);
    events_.push_back(event);
  }
  std::vector<nlohmann::json> events() {
    AnnotatedMutexLock lock(&mu_);
    return events_;
  }

 private:
  AnnotatedMutex mu_;
  std::vector<nlohmann::json> events_ ABLATE_GUARDED_BY(mu_);
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_EVENT_SINK_H_
