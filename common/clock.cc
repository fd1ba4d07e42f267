// The system's clocks, read in milliseconds.
#include "common/clock.h"

#include <chrono>

namespace ablate {

const SystemClock& SystemClock::Get() {
  static const SystemClock clock;
  return clock;
}

int64_t SystemClock::WallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SystemClock::MonotonicMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace ablate
