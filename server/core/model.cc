// Names of the domain enums, as stored in SQLite and shown to people.
#include "server/core/model.h"

#include <array>
#include <utility>

namespace ablate {
namespace {

constexpr std::array<std::pair<SweepState, std::string_view>, 5> kSweepNames = {{
    {SweepState::kQueued, "queued"},
    {SweepState::kRunning, "running"},
    {SweepState::kSucceeded, "succeeded"},
    {SweepState::kFailed, "failed"},
    {SweepState::kCancelled, "cancelled"},
}};
constexpr std::array<std::pair<RunState, std::string_view>, 6> kRunNames = {{
    {RunState::kQueued, "queued"},
    {RunState::kAssigned, "assigned"},
    {RunState::kRunning, "running"},
    {RunState::kSucceeded, "succeeded"},
    {RunState::kFailed, "failed"},
    {RunState::kCancelled, "cancelled"},
}};
constexpr std::array<std::pair<AttemptState, std::string_view>, 6> kAttemptNames = {{
    {AttemptState::kAssigned, "assigned"},
    {AttemptState::kRunning, "running"},
    {AttemptState::kSucceeded, "succeeded"},
    {AttemptState::kFailed, "failed"},
    {AttemptState::kLost, "lost"},
    {AttemptState::kCancelled, "cancelled"},
}};

template <class E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [value, name] : table) {
    if (value == e) return name;
  }
  return "unknown";
}

template <class E, size_t N>
std::optional<E> ValueOf(const std::array<std::pair<E, std::string_view>, N>& table,
                         std::string_view name) {
  for (const auto& [value, n] : table) {
    if (n == name) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view SweepStateName(SweepState s) { return NameOf(kSweepNames, s); }
std::string_view RunStateName(RunState s) { return NameOf(kRunNames, s); }
std::string_view AttemptStateName(AttemptState s) { return NameOf(kAttemptNames, s); }
std::optional<SweepState> ParseSweepState(std::string_view n) { return ValueOf(kSweepNames, n); }
std::optional<RunState> ParseRunState(std::string_view n) { return ValueOf(kRunNames, n); }

bool IsTerminal(RunState s) {
  return s == RunState::kSucceeded || s == RunState::kFailed || s == RunState::kCancelled;
}

}  // namespace ablate
