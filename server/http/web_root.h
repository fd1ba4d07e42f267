// Where the dashboard's assets are: a web root holds static/ (the pages, index.html first) and
// node_modules/uplot/dist (uPlot, installed by `npm ci` in web/).
#ifndef ABLATE_SERVER_HTTP_WEB_ROOT_H_
#define ABLATE_SERVER_HTTP_WEB_ROOT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ablate {

// The first of `candidates` that holds static/index.html. NOT_FOUND listing every candidate
// looked at when none does.
absl::StatusOr<std::string> FindWebRoot(const std::vector<std::string>& candidates);

// Where a web root may be for a binary at `exe_path`, in order: <exe dir>/../share/ablate/web
// (installed), <exe dir>/web, then `source_web_dir` (the source tree's web/, baked in at build
// time so that binaries in the build tree find it).
std::vector<std::string> DefaultWebRoots(const std::string& exe_path,
                                         const std::string& source_web_dir);

// A sentence for the operator when `web_root` lacks uPlot (npm ci not run); "" when it has it.
std::string MissingVendorWarning(const std::string& web_root);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_WEB_ROOT_H_
