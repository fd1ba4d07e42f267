// A text cut into its lines, each keeping its '\n' (the last may lack one), so that joining
// them gives the text back byte for byte. Pure C++ with no dependencies: the trainer builds with
// it alone (common/portable.cmake).
#ifndef ABLATE_COMMON_TEXT_LINES_H_
#define ABLATE_COMMON_TEXT_LINES_H_

#include <string_view>
#include <vector>

namespace ablate {

// Views into `text`: valid while it is. An empty text has no lines.
std::vector<std::string_view> LinesWithNewlines(std::string_view text);

}  // namespace ablate

#endif  // ABLATE_COMMON_TEXT_LINES_H_
