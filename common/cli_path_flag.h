// The CLI11 side of AbsolutePath (absolute_path.h): every path flag of ablate, ablate-coordinator,
// ablate-worker, ablate-train and ablate-data is declared with ->transform(PathFlag()), so that
// nothing after the command line sees a relative path. Header-only, like CLI11.
#ifndef ABLATE_COMMON_CLI_PATH_FLAG_H_
#define ABLATE_COMMON_CLI_PATH_FLAG_H_

#include <CLI/CLI.hpp>
#include <string>

#include "common/absolute_path.h"

namespace ablate {

// A transform, not a check: it rewrites the value (each value, for a vector option) in place.
inline CLI::Validator PathFlag(PathKind kind = PathKind::kFile) {
  return CLI::Validator(
      [kind](std::string& value) {
        value = AbsolutePath(value, kind);
        return std::string();
      },
      "", "absolute path");
}

}  // namespace ablate

#endif  // ABLATE_COMMON_CLI_PATH_FLAG_H_
