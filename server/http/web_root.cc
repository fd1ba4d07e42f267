// Locating the dashboard's assets.
#include "server/http/web_root.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ablate {

namespace fs = std::filesystem;

absl::StatusOr<std::string> FindWebRoot(const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (!c.empty() && fs::is_regular_file(fs::path(c) / "static" / "index.html", ec)) return c;
  }
  return absl::NotFoundError(absl::StrCat("no dashboard assets (static/index.html) in any of: ",
                                          absl::StrJoin(candidates, ", ")));
}

std::vector<std::string> DefaultWebRoots(const std::string& exe_path,
                                         const std::string& source_web_dir) {
  fs::path dir = fs::path(exe_path).parent_path();
  return {(dir.parent_path() / "share" / "ablate" / "web").string(), (dir / "web").string(),
          source_web_dir};
}

std::string MissingVendorWarning(const std::string& web_root) {
  std::error_code ec;
  if (fs::is_regular_file(fs::path(web_root) / "node_modules/uplot/dist/uPlot.esm.js", ec)) {
    return "";
  }
  return absl::StrCat("uPlot is missing from ", web_root,
                      "/node_modules: charts will not draw; run `npm ci` in ", web_root,
                      " (./dev.sh deps does)");
}

}  // namespace ablate
