// LinesWithNewlines; see text_lines.h.
#include "common/text_lines.h"

namespace ablate {

std::vector<std::string_view> LinesWithNewlines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    size_t len = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(0, len));
    text.remove_prefix(len);
  }
  return lines;
}

}  // namespace ablate
