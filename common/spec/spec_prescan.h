// Checks on the raw bytes of a spec file (a sweep spec, the pools file), run before yaml-cpp
// sees them: size, UTF-8 and nesting depth. yaml-cpp parses recursively, so a spec nested deeper
// than kMaxSpecDepth is refused here and the parser never recurses deeply, whatever the input.
#ifndef ABLATE_COMMON_SPEC_SPEC_PRESCAN_H_
#define ABLATE_COMMON_SPEC_SPEC_PRESCAN_H_

#include <cstddef>
#include <optional>
#include <string_view>

#include "common/spec/spec_errors.h"

namespace ablate {

inline constexpr size_t kMaxSpecBytes = size_t{1} << 20;  // 1 MiB
inline constexpr int kMaxSpecDepth = 32;                  // nested maps, lists and flows

// Returns false after adding exactly one error when the text must not be given to the YAML
// parser: larger than kMaxSpecBytes, not valid UTF-8 (position of the first bad byte), or
// nested deeper than kMaxSpecDepth (position of the first construct past the limit).
// The scan is linear in the size of the text and uses constant stack.
bool PrescanSpec(std::string_view text, SpecErrors* errors);

// The first tab character used as indentation on a line at or before `line` (1-based), if any.
// Used to explain a YAML syntax error (YAML allows only spaces in indentation).
std::optional<SpecPosition> FindTabIndentation(std::string_view text, int line);

}  // namespace ablate

#endif  // ABLATE_COMMON_SPEC_SPEC_PRESCAN_H_
