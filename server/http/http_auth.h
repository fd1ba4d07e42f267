// The dashboard's client-token check (DESIGN §4): when the coordinator has a client token, every
// API request must carry it, as `Authorization: Bearer <token>` or as the cookie that the login
// form sets (EventSource cannot send headers, so the browser relies on the cookie).
// Pure functions over header values; no HTTP library types.
#ifndef ABLATE_SERVER_HTTP_HTTP_AUTH_H_
#define ABLATE_SERVER_HTTP_HTTP_AUTH_H_

#include <optional>
#include <string>
#include <string_view>

namespace ablate {

inline constexpr std::string_view kTokenCookie = "ablate_token";

// What an API request without the right token is told (401).
inline constexpr std::string_view kTokenRequired =
    "this coordinator requires its client token: send 'Authorization: Bearer <token>' or log in "
    "at /login";

// Compares in time that depends only on the length of `expected`, so a wrong guess reveals
// nothing of where it went wrong, not even whether its length was right.
bool ConstantTimeEquals(std::string_view given, std::string_view expected);

// The token of an `Authorization: Bearer <token>` header value; nullopt for any other scheme.
std::optional<std::string_view> BearerToken(std::string_view authorization);

// The value of cookie `name` in a `Cookie:` header value ("a=1; b=2"), nullopt when absent.
std::optional<std::string_view> CookieValue(std::string_view cookie_header, std::string_view name);

// True when `expected` is empty (no token configured) or either header carries it.
bool RequestAuthorized(std::string_view authorization, std::string_view cookie_header,
                       std::string_view expected);

// Whether the request presents a client token at all (a Bearer header or the login cookie), so
// that a wrong one counts as a guess.
bool CarriesToken(std::string_view authorization, std::string_view cookie_header);

// Where to send the browser after logging in: `next` when it is a path on this site ("/sweeps/3",
// with query), else "/". Refused: anything not starting with one '/', "//host", "/\host" (browsers
// read a backslash as a slash), and any control character, space, backslash or non-ASCII byte.
std::string SafeRedirectPath(std::string_view next);

// Whether the dashboard is served over HTTPS: its cookie is then Secure (never sent in clear).
enum class CookieTransport { kHttp, kHttps };

// Set-Cookie values that store the token (hex-encoded) for the browser session / remove it.
// The cookie is HttpOnly (page scripts never see it), SameSite=Strict (no cross-site use), and
// Secure under HTTPS.
std::string LoginCookie(std::string_view token, CookieTransport transport = CookieTransport::kHttp);
std::string LogoutCookie(CookieTransport transport = CookieTransport::kHttp);

// Whether a listen host reaches this machine only: "localhost", "::1" or 127.x.x.x. Anything
// else ("0.0.0.0", "::", a name or an interface address) may be reached from the network.
bool IsLoopbackHost(std::string_view host);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_HTTP_AUTH_H_
