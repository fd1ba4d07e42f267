// Slows down token guessing on the dashboard: an address that keeps presenting wrong client tokens
// must wait longer and longer before its next try. Pure logic over an injected clock.
#ifndef ABLATE_SERVER_HTTP_LOGIN_THROTTLE_H_
#define ABLATE_SERVER_HTTP_LOGIN_THROTTLE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"

namespace ablate {

struct LoginThrottleOptions {
  int free_failures = 3;          // wrong tokens in a row before any wait
  int64_t first_wait_ms = 1000;   // after the first failure beyond those; doubles each time
  int64_t max_wait_ms = 60000;
  size_t max_addresses = 10000;   // tracked at once; the one idle longest is forgotten first
  const Clock* clock = &SystemClock::Get();  // its MonotonicMs; not owned, outlives the throttle
};

// Thread-safe. An address's count of failures in a row is cleared by a success, and forgotten
// once it has been idle for max_wait_ms after its wait ended.
class LoginThrottle {
 public:
  explicit LoginThrottle(LoginThrottleOptions options = {});

  // Milliseconds `address` must still wait before a token from it is even looked at; 0 = now.
  int64_t WaitMs(const std::string& address);
  // A wrong token came from `address`.
  void Failed(const std::string& address);
  void Succeeded(const std::string& address);

 private:
  struct Entry {
    int failures = 0;
    int64_t last_ms = 0;    // of the last failure
    int64_t until_ms = 0;   // no tries before this
  };
  int64_t Now() const { return options_.clock->MonotonicMs(); }
  void ForgetIdle(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LoginThrottleOptions options_;
  absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// RESOURCE_EXHAUSTED (answered 429 with Retry-After) for a token from `address` that must wait
// `wait_ms` more before it is looked at.
absl::Status TooManyGuesses(std::string_view address, int64_t wait_ms);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_LOGIN_THROTTLE_H_
