// Reading a token file (client or worker token, as DESIGN §4's authentication uses them), the one
// way the coordinator, the worker and the CLI all do it.
#ifndef ABLATE_COMMON_TOKEN_FILE_H_
#define ABLATE_COMMON_TOKEN_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace ablate {

// The file's text without surrounding whitespace; "" for an empty path (no token). Errors:
// NotFound "cannot read token file F"; InvalidArgument "token file F is empty" (an empty token
// would silently turn authentication off on the coordinator, or fail it with no hint elsewhere).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace ablate

#endif  // ABLATE_COMMON_TOKEN_FILE_H_
