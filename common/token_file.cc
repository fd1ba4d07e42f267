#include "common/token_file.h"

#include <fstream>
#include <sstream>

namespace ablate {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read token file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  t.erase(0, t.find_first_not_of(" \t\r\n"));
  t.erase(t.find_last_not_of(" \t\r\n") + 1);
  if (t.empty()) return absl::InvalidArgumentError("token file " + path + " is empty");
  return t;
}

}  // namespace ablate
