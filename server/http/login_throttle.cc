// LoginThrottle: exponential waits per address after a few free failures.
#include "server/http/login_throttle.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/store/absl_compat.h"

namespace ablate {

LoginThrottle::LoginThrottle(LoginThrottleOptions options) : options_(std::move(options)) {}

int64_t LoginThrottle::WaitMs(const std::string& address) {
  const int64_t now = Now();
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(address);
  if (it == entries_.end()) return 0;
  return std::max<int64_t>(0, it->second.until_ms - now);
}

void LoginThrottle::Failed(const std::string& address) {
  const int64_t now = Now();
  absl::MutexLock lock(&mu_);
  ForgetIdle(now);
  Entry& e = entries_[address];
  e.failures += 1;
  e.last_ms = now;
  int beyond = e.failures - options_.free_failures;
  if (beyond <= 0) return;
  int64_t wait = options_.first_wait_ms;
  for (int i = 1; i < beyond && wait < options_.max_wait_ms; ++i) wait *= 2;
  e.until_ms = now + std::min(wait, options_.max_wait_ms);
}

void LoginThrottle::Succeeded(const std::string& address) {
  absl::MutexLock lock(&mu_);
  entries_.erase(address);
}

void LoginThrottle::ForgetIdle(int64_t now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& e = it->second;
    bool idle = now - std::max(e.last_ms, e.until_ms) > options_.max_wait_ms;
    it = idle ? entries_.erase(it) : std::next(it);
  }
  // Still too many (a flood from many addresses): forget the longest idle ones.
  while (entries_.size() >= options_.max_addresses) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      return a.second.last_ms < b.second.last_ms;
    });
    entries_.erase(oldest);
  }
}

absl::Status TooManyGuesses(std::string_view address, int64_t wait_ms) {
  return absl::ResourceExhaustedError(absl::StrCat("too many wrong client tokens from ",
                                                   ToAbsl(address), "; try again in ",
                                                   (wait_ms + 999) / 1000, " s"));
}

}  // namespace ablate
