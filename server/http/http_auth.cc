// Token checks for the dashboard API.
#include "server/http/http_auth.h"

#include <cctype>

namespace ablate {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// Cookie values may not hold every byte a token file can; the cookie carries the token in hex.
std::string Hex(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace

bool CarriesToken(std::string_view authorization, std::string_view cookie_header) {
  return BearerToken(authorization).has_value() ||
         CookieValue(cookie_header, kTokenCookie).has_value();
}

std::string SafeRedirectPath(std::string_view next) {
  if (next.size() < 1 || next[0] != '/') return "/";
  if (next.size() > 1 && (next[1] == '/' || next[1] == '\\')) return "/";
  for (unsigned char c : next) {
    if (c <= 0x20 || c >= 0x7f || c == '\\') return "/";
  }
  return std::string(next);
}

bool ConstantTimeEquals(std::string_view given, std::string_view expected) {
  // Every byte of `expected` is compared whatever `given` is: no early exit on a wrong length
  // or a wrong first byte.
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= g ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  authorization = Trim(authorization);
  if (authorization.size() <= kScheme.size() || !StartsWithIgnoreCase(authorization, kScheme)) {
    return std::nullopt;
  }
  return Trim(authorization.substr(kScheme.size()));
}

std::optional<std::string_view> CookieValue(std::string_view cookie_header, std::string_view name) {
  while (!cookie_header.empty()) {
    size_t semi = cookie_header.find(';');
    std::string_view part = Trim(cookie_header.substr(0, semi));
    size_t eq = part.find('=');
    if (eq != std::string_view::npos && part.substr(0, eq) == name) return part.substr(eq + 1);
    if (semi == std::string_view::npos) break;
    cookie_header.remove_prefix(semi + 1);
  }
  return std::nullopt;
}

bool RequestAuthorized(std::string_view authorization, std::string_view cookie_header,
                       std::string_view expected) {
  if (expected.empty()) return true;
  std::optional<std::string_view> bearer = BearerToken(authorization);
  if (bearer && ConstantTimeEquals(*bearer, expected)) return true;
  std::optional<std::string_view> cookie = CookieValue(cookie_header, kTokenCookie);
  return cookie && ConstantTimeEquals(*cookie, Hex(expected));
}

std::string LoginCookie(std::string_view token, CookieTransport transport) {
  return std::string(kTokenCookie) + "=" + Hex(token) + "; Path=/; HttpOnly; SameSite=Strict" +
         (transport == CookieTransport::kHttps ? "; Secure" : "");
}

std::string LogoutCookie(CookieTransport transport) {
  return std::string(kTokenCookie) + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" +
         (transport == CookieTransport::kHttps ? "; Secure" : "");
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

}  // namespace ablate
