// Error values for the trainer's libraries.
// The trainer must build on GPU machines that have only CUDA and a compiler (no abseil), so it
// carries this small Status/Result pair; the service converts them to absl::Status at its edge.
#ifndef ABLATE_TRAINER_CONFIG_RESULT_H_
#define ABLATE_TRAINER_CONFIG_RESULT_H_

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ablate {

// What went wrong, in words a person can act on. `key` names the offending knob or field when
// there is one (empty otherwise), so callers can point at it (a spec's line and column).
struct Error {
  std::string message;
  std::string key;
};

// Success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)) {}  // NOLINT: implicit on purpose, `return Error{...}`.
  bool ok() const { return !error_.has_value(); }
  // REQUIRES: !ok()
  const Error& error() const { return *error_; }
  const std::string& message() const { return error_->message; }

 private:
  std::optional<Error> error_;
};

// A value of T, or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT
  Result(Error e) : v_(std::move(e)) {}      // NOLINT
  bool ok() const { return v_.index() == 0; }
  // REQUIRES: ok()
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  // REQUIRES: !ok()
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace ablate

// Propagates a failed Status (any expression of type Status) from a function that returns
// Status or Result<T>.
#define ABLATE_RETURN_IF_ERROR(...)                          \
  do {                                                       \
    ::ablate::Status ablate_status_ = (__VA_ARGS__);         \
    if (!ablate_status_.ok()) return ablate_status_.error(); \
  } while (0)

#endif  // ABLATE_TRAINER_CONFIG_RESULT_H_
