// AbsolutePath: std::filesystem::absolute, less the "." components it keeps.
#include "common/absolute_path.h"

#include <filesystem>
#include <system_error>

namespace ablate {

std::string AbsolutePath(const std::string& path, PathKind kind) {
  if (path.empty() || path == "-") return path;
  if (kind == PathKind::kProgram && path.find('/') == std::string::npos) return path;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path whole = fs::absolute(fs::path(path), ec);
  if (ec) return path;  // no current directory: left as given; opening it names the problem
  fs::path out;
  for (const fs::path& part : whole) {
    if (part != ".") out /= part;
  }
  std::string text = out.string();
  // "dir/" keeps its trailing slash (it says "a directory"); fs::path iteration ends it in "".
  if (path.back() == '/' && text.back() != '/') text += '/';
  return text;
}

}  // namespace ablate
