// The one clock of the project: what every program asks for "now", in milliseconds, and what
// tests replace (STYLE.md: the environment is injected). Two readings, never to be mixed:
// - WallMs: ms since the Unix epoch (system_clock). For what is stored, sent or shown to a
//   person (timestamps, heartbeats); it can jump when the machine's time is set.
// - MonotonicMs: ms since an arbitrary origin (steady_clock). For intervals and deadlines inside
//   one process (idleness, backoff, batching); it never goes back, and means nothing elsewhere.
#ifndef ABLATE_COMMON_CLOCK_H_
#define ABLATE_COMMON_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace ablate {

// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t WallMs() const = 0;
  virtual int64_t MonotonicMs() const = 0;
};

// The machine's clocks. Stateless; Get() is the default of every injectable clock.
class SystemClock final : public Clock {
 public:
  static const SystemClock& Get();
  int64_t WallMs() const override;
  int64_t MonotonicMs() const override;
};

// A clock that moves only when told: both readings advance together by Advance; SetWallMs moves
// the wall reading alone (as when a machine's time is set). For tests.
class ManualClock final : public Clock {
 public:
  // 2026-01-01T00:00:00Z: a wall reading that formats as a plausible date.
  static constexpr int64_t kDefaultWallMs = 1'767'225'600'000;

  explicit ManualClock(int64_t wall_ms = kDefaultWallMs, int64_t monotonic_ms = 0)
      : wall_ms_(wall_ms), monotonic_ms_(monotonic_ms) {}

  int64_t WallMs() const override { return wall_ms_.load(); }
  int64_t MonotonicMs() const override { return monotonic_ms_.load(); }

  void Advance(int64_t ms) {
    wall_ms_ += ms;
    monotonic_ms_ += ms;
  }
  void SetWallMs(int64_t ms) { wall_ms_ = ms; }

 private:
  std::atomic<int64_t> wall_ms_;
  std::atomic<int64_t> monotonic_ms_;
};

}  // namespace ablate

#endif  // ABLATE_COMMON_CLOCK_H_
