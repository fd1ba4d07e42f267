// UTF-8 text from outside (a worker's stderr, a script's error): made valid and cut on character
// boundaries, so that it fits a proto3 string field and every reader. Used by the worker, which
// makes its text valid at the source, and by the coordinator, which checks what arrives.
#ifndef ABLATE_COMMON_UTF8_TEXT_H_
#define ABLATE_COMMON_UTF8_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace ablate {

// Length of the well-formed UTF-8 sequence at text[i] (1..4), or 0 when the bytes there are not
// one (a stray continuation byte, an overlong form, a surrogate, a truncated sequence).
size_t Utf8SequenceAt(std::string_view text, size_t i);

bool IsValidUtf8(std::string_view text);

// `text` with every byte that is not part of a well-formed sequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view text);

// The longest prefix of valid UTF-8 `text` with at most `max_bytes` bytes that ends on a
// character boundary.
std::string_view Utf8Head(std::string_view text, size_t max_bytes);
// The longest suffix of valid UTF-8 `text` with at most `max_bytes` bytes that starts on a
// character boundary.
std::string_view Utf8Tail(std::string_view text, size_t max_bytes);

}  // namespace ablate

#endif  // ABLATE_COMMON_UTF8_TEXT_H_
