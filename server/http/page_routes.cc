// The pages: static files of <web root>/static, uPlot from node_modules, and index.html for
// every page path, which app.js then renders (no build step, no CDN: everything comes from here).
// Files go out uncompressed through a content provider: httplib would otherwise brotli-compress
// each one at its highest level for browsers, which costs more than a page load (NOTES.md).
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/match.h"
#include "server/http/http_routes.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;

// Page paths that index.html renders.
constexpr char kPagePattern[] = R"(/(sweeps(/[^/]+)?|runs/[^/]+|workers|records|login)/?)";

const char* MimeOf(const fs::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".js" || ext == ".mjs") return "text/javascript";
  if (ext == ".css") return "text/css";
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".json" || ext == ".map") return "application/json";
  return "application/octet-stream";
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

void SendFile(const fs::path& file, httplib::Response& res) {
  auto body = std::make_shared<std::string>();
  if (!ReadFile(file.string(), body.get())) {
    res.status = 404;
    return;  // the error handler answers
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_content_provider(body->size(), MimeOf(file),
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(body->data() + offset, length);
                           });
}

// GET `pattern`, whose first group is a path inside `dir`; only files inside it are served (no
// "..", no links out of it).
void ServeFolder(httplib::Server& http, const std::string& pattern, const fs::path& dir) {
  http.Get(pattern, [dir](const httplib::Request& req, httplib::Response& res) {
    std::error_code ec;
    fs::path root = fs::weakly_canonical(dir, ec);
    fs::path file = fs::weakly_canonical(dir / req.matches[1].str(), ec);
    const std::string inside = root.string() + "/";
    if (ec || !absl::StartsWith(file.string(), inside) || !fs::is_regular_file(file, ec)) {
      res.status = 404;
      return;
    }
    SendFile(file, res);
  });
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
  ServeFolder(http, "/vendor/uplot/(.+)", fs::path(root) / "node_modules/uplot/dist");
  ServeFolder(http, "/((?:js|css)/.+)", fs::path(root) / "static");
  http.Get("/favicon.svg", [root](const httplib::Request&, httplib::Response& res) {
    SendFile(fs::path(root) / "static/favicon.svg", res);
  });
  const std::string index = root + "/static/index.html";
  http.Get(std::string(kPagePattern) + "|/",
           [index](const httplib::Request&, httplib::Response& res) { SendFile(index, res); });
}

}  // namespace ablate
