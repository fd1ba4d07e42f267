// The pages: static files of <web root>/static, uPlot from node_modules, and index.html for
// every page path, which app.js then renders (no build step, no CDN: everything comes from here).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/http/http_routes.h"

namespace ablate {
namespace {

// Page paths that index.html renders.
constexpr char kPagePattern[] = R"(/(sweeps(/[^/]+)?|runs/[^/]+|workers|records|login)/?)";

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace

void AddPageRoutes(httplib::Server& http, const RouteContext& ctx) {
  const std::string root = ctx.options->web_root;
  if (root.empty()) {
    http.Get(std::string(kPagePattern) + "|/", [](const httplib::Request&, httplib::Response& res) {
      res.status = 503;
      res.set_content(
          "The dashboard's pages were not found; start ablate-coordinator with --web-root "
          "pointing at the web/ folder. The JSON API under /api works without them.\n",
          "text/plain");
    });
    return;
  }
  httplib::Headers no_cache = {{"Cache-Control", "no-cache"}};
  http.set_mount_point("/vendor/uplot", root + "/node_modules/uplot/dist", no_cache);
  http.set_mount_point("/", root + "/static", no_cache);
  http.set_file_extension_and_mimetype_mapping("js", "text/javascript");
  http.set_file_extension_and_mimetype_mapping("mjs", "text/javascript");
  const std::string index = root + "/static/index.html";
  http.Get(kPagePattern, [index](const httplib::Request&, httplib::Response& res) {
    std::string html;
    if (!ReadFile(index, &html)) {
      res.status = 500;
      res.set_content("cannot read " + index + "\n", "text/plain");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_content(html, "text/html; charset=utf-8");
  });
}

}  // namespace ablate
