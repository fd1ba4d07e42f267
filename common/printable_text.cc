// Control-character detection and escaping over UTF-8 text.
#include "common/printable_text.h"

#include <cstdint>
#include <cstdio>

namespace ablate {
namespace {

// One decoded character: its code point and byte length; length 0 for a malformed sequence
// (then `cp` is the bad byte).
struct Char {
  uint32_t cp = 0;
  size_t len = 0;
};

Char Decode(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return {c, 1};
  size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (len == 0 || c > 0xF4 || i + len > s.size()) return {c, 0};
  uint32_t cp = c & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {c, 0};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {c, 0};
  return {cp, len};
}

bool IsControl(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string Hex(const char* format, uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, static_cast<unsigned>(v));
  return buf;
}

}  // namespace

std::optional<std::string> UnprintableReason(std::string_view text) {
  size_t n = 1;
  for (size_t i = 0; i < text.size(); ++n) {
    Char c = Decode(text, i);
    if (c.len == 0) {
      return "invalid UTF-8 byte " + Hex("0x%02X", c.cp) + " at character " + std::to_string(n);
    }
    if (IsControl(c.cp)) {
      return "control character " + Hex("U+%04X", c.cp) + " at character " + std::to_string(n);
    }
    i += c.len;
  }
  return std::nullopt;
}

std::string TerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    Char c = Decode(text, i);
    if (c.len == 0) {
      out += Hex("\\x%02x", c.cp);
      ++i;
    } else if (IsControl(c.cp)) {
      out += c.cp <= 0xFF ? Hex("\\x%02x", c.cp) : Hex("\\u%04x", c.cp);
      i += c.len;
    } else {
      out.append(text.substr(i, c.len));
      i += c.len;
    }
  }
  return out;
}

}  // namespace ablate
