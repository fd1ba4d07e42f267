// Text that ends up on a terminal or in a table (tags, names, worker text) must not carry
// characters that drive the terminal: C0 controls (ESC, BEL, NUL, CR...), DEL, C1 controls and
// the Unicode bidirectional overrides that reorder what is shown. One definition for the spec
// checks (refuse) and the CLI (escape). Pure functions over UTF-8 text.
#ifndef ABLATE_COMMON_PRINTABLE_TEXT_H_
#define ABLATE_COMMON_PRINTABLE_TEXT_H_

#include <optional>
#include <string>
#include <string_view>

namespace ablate {

// Why `text` is not plain printable UTF-8, e.g. "control character U+001B at character 4" or
// "invalid UTF-8 byte 0xFF at character 2"; nullopt when it is. Characters count from 1.
std::optional<std::string> UnprintableReason(std::string_view text);

// `text` with every character UnprintableReason objects to written as an escape ("\x1b",
// "\u202e", a lone bad byte as "\xff"); printable text, including other UTF-8, is unchanged.
std::string TerminalSafe(std::string_view text);

}  // namespace ablate

#endif  // ABLATE_COMMON_PRINTABLE_TEXT_H_
