// Debian's abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0),
// which does not convert from std::string_view; this bridges the two for absl::StrCat.
#ifndef ABLATE_SERVER_STORE_ABSL_COMPAT_H_
#define ABLATE_SERVER_STORE_ABSL_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace ablate {

inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_ABSL_COMPAT_H_
