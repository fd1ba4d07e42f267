// Early-return helpers for Status plumbing inside the store (abseil does not export its own).
#ifndef ABLATE_SERVER_STORE_STATUS_MACROS_H_
#define ABLATE_SERVER_STORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define STORE_RETURN_IF_ERROR(expr)                \
  do {                                             \
    const absl::Status store_status_ = (expr);     \
    if (!store_status_.ok()) return store_status_; \
  } while (false)

#define STORE_CONCAT_INNER_(a, b) a##b
#define STORE_CONCAT_(a, b) STORE_CONCAT_INNER_(a, b)
#define STORE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(*tmp)

// `lhs = *expr` for a StatusOr `expr`, or returns its error from the enclosing function.
#define STORE_ASSIGN_OR_RETURN(lhs, expr) \
  STORE_ASSIGN_OR_RETURN_IMPL_(STORE_CONCAT_(store_statusor_, __LINE__), lhs, expr)

#endif  // ABLATE_SERVER_STORE_STATUS_MACROS_H_
