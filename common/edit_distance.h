// Levenshtein distance, for "did you mean" suggestions (unknown knobs, keys and names). Pure C++
// with no dependencies: the trainer builds with it alone (common/portable.cmake).
#ifndef ABLATE_COMMON_EDIT_DISTANCE_H_
#define ABLATE_COMMON_EDIT_DISTANCE_H_

#include <cstddef>
#include <string_view>

namespace ablate {

// Insertions, deletions and substitutions that turn `a` into `b`. O(|a|·|b|) time.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace ablate

#endif  // ABLATE_COMMON_EDIT_DISTANCE_H_
